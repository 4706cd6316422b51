// Type-checks against the declarations of internal/e2e/jsontypes' routes
// (TestDeclarationsTypeCheck): this file must compile with tsc --strict.
import { routes } from "@quarkiverse/chat-scopes-api";
import type { Diamond, Everything, Lazy, Level, Priority, Report, Tree } from "@quarkiverse/chat-scopes-api";

function show(e: Everything): string {
    const lazy: string | Lazy = e.lazy;
    const text = typeof lazy === "string" ? lazy : lazy.V;
    const bytes: string = e.bytes ?? "";
    const quoted: string | null = e.quotePtr;
    const diamond: Diamond = e.diamond;
    const level: Level = e.level === "" ? "info" : e.level;
    const prio: Priority = e.prio;
    const kids: number = (e.tree.children ?? []).filter((c): c is Tree => c !== null).length;
    return [text, bytes, quoted, diamond.L + diamond.R, level, prio, kids, e["-"], e.Inline.tags?.length, e.id ?? 0].join();
}

const session = await routes.put.connect({
    onObject(data) {
        console.log(data);
    },
    onReport(r: Report, frame) {
        console.log(r.level, r.tree?.name, r.data, frame.type);
    },
});
await session.send({ level: "", prio: 0 });
await session.send({ page: { items: [{ sku: "a" }], next: null } });
const tree = await routes.tree.connect();
await tree.send({ tree: { name: "root", children: [{ name: "leaf", children: null }, null] } });
const report = await routes.report.connect();
await report.send({ report: { level: "debug", data: null } });
console.log(show);
