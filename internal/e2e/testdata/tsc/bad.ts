// Must not compile (TestTypedRoutesTypeCheck): each line with a
// "want:" comment has the error it names.
import { routes, order } from "@quarkiverse/chat-scopes-api";

const session = await routes.builder.connect({
    onWeapon(w) {
        const name: number = w.name; // want: Type 'string' is not assignable to type 'number'
        console.log(name);
    },
});
await session.send({ userMessage: "build bow", damage: "forty" }); // want: property 'damage'
await session.send({ userMessage: "build bow", damge: 40 }); // want: 'damge' does not exist
await order.connect({ onRecipt() {} }); // want: Did you mean to write 'onReceipt'?
const o = await order.connect();
await o.send({ lines: [{ item: "bow", quantity: 1, size: "huge", price: "1" }] }); // want: Type '"huge"' is not assignable to type 'Size'
await o.send({ due: new Date() }); // want: property 'due'
