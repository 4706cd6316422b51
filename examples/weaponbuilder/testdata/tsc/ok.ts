// A page's script against the weaponbuilder's routes
// (TestTypedRoutesTypeCheck): this file must compile with tsc --strict.
import { routes, defaultRoute, menu, weapon } from "@quarkiverse/chat-scopes-api";
import type { Armor, Conversation, Enchantment, Inventory, Kind, Weapon } from "@quarkiverse/chat-scopes-api";

function card(w: Weapon): string {
    const kind: Kind = w.kind;
    const enchantment: Enchantment | undefined = w.enchantment;
    const power: number = enchantment ? enchantment.power : 0;
    return `${w.name} (${kind}, ${w.damage + power} damage)${w.saved ? " ✓" : ""}`;
}

function armory(inv: Inventory): string[] {
    const weapons = (inv.weapons ?? []).map(card);
    const armor = (inv.armor ?? []).map((a: Armor) => a.piece + " of " + a.material);
    return weapons.concat(armor);
}

const session = await defaultRoute.connect({
    // The routes render their answers from markdown (//chat:markdown):
    // the frame says when the data is HTML, and carries the rendering of
    // a whole stream.
    onMessage(text, frame) {
        console.log(frame.markdown !== undefined ? "html: " + text : text.trim());
    },
    onStream(chunk, frame) {
        console.log(frame.html ?? chunk);
    },
    defaultHandler(type, data, frame) {
        console.log(type, data, frame.chatId);
    },
    onThinking(text) {
        console.log("…" + text);
    },
    onWeapon(w) {
        console.log(card(w));
    },
    onArmor(a) {
        console.log(a.saved ? "saved " + a.piece : a.piece);
    },
    onConversation(c: Conversation) {
        console.log(c.name.toUpperCase(), c.depth + 1);
    },
    onInventory(inv) {
        console.log(armory(inv).join("\n"));
    },
});
await session.send({ userMessage: "build a weapon" });
await session.chat("a bow called Longshot");
const kinds: Kind[] = ["sword", "axe", "bow", "dagger", "staff"];
const direct = await weapon.connect({ onWeapon: (w) => console.log(w.kind === kinds[2]) });
await direct.send({ userMessage: "damage 40" });
console.log(routes.menu === menu, menu.name, routes.enchant.params, routes.armor.events);
