// The import map of the chat scopes modules (runtime/ws), served where the
// Quarkus web-dependency-locator serves its generated import map, so that
// pages written for newer Quarkus versions work unchanged. Load it with a
// classic script before any module script:
//
//     <script src="/_importmap/generated_importmap.js"></script>
//     <script type="module">
//         import { ChatScopesClient } from "@quarkiverse/chat-scopes";
//         import { routes } from "@quarkiverse/chat-scopes-api";
//     </script>
//
// The modules are found next to this script's URL (../_chat/javascript/).
(() => {
    const script = document.currentScript;
    const base = script && script.src ? script.src : new URL("/_importmap/generated_importmap.js", location.href).href;
    const map = document.createElement("script");
    map.type = "importmap";
    map.textContent = JSON.stringify({
        imports: {
            "@quarkiverse/chat-scopes": new URL("../_chat/javascript/chatscopes.mjs", base).href,
            "@quarkiverse/chat-scopes-api": new URL("../_chat/javascript/routes.mjs", base).href,
        },
    });
    if (script) {
        script.after(map);
    } else {
        document.head.appendChild(map);
    }
})();
