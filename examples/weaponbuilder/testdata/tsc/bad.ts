// Must not compile (TestTypedRoutesTypeCheck): each line with a
// "want:" comment has the error it names.
import { routes } from "@quarkiverse/chat-scopes-api";
import type { Kind } from "@quarkiverse/chat-scopes-api";

const session = await routes.weapon.connect({
    onWeapon(w) {
        const damage: string = w.damage; // want: Type 'number' is not assignable to type 'string'
        console.log(damage, w.enchantment.power); // want: 'w.enchantment' is possibly 'undefined'
    },
    onObject(o) {
        console.log(o.power); // want: 'o' is of type 'unknown'
    },
    onInventory(inv) {
        console.log(inv.weapons.length); // want: 'inv.weapons' is possibly 'null'
    },
});
await session.send({ userMessage: 40 }); // want: property 'userMessage'
await session.send({ userMessage: "a bow", damage: 40 }); // want: 'damage' does not exist
const kind: Kind = "spear"; // want: Type '"spear"' is not assignable to type 'Kind'
await routes.forge.connect(); // want: Property 'forge' does not exist
console.log(kind);
