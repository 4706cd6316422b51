// Type-checks against the declarations of internal/e2e's routes
// (TestTypedRoutesTypeCheck): this file must compile with tsc --strict.
import { routes, defaultRoute, client, endpoint, builder, order } from "@quarkiverse/chat-scopes-api";
import type { Line, Receipt, Size, Weapon } from "@quarkiverse/chat-scopes-api";
import { ChatFailure } from "@quarkiverse/chat-scopes";

const log: string[] = [];

// The example of the issue: typed handlers and typed parameters.
const session = await routes.builder.connect({
    onWeapon(w) {
        log.push(w.name + "/" + (w.damage + 1));
    },
    onMessage(text) {
        log.push(text.toUpperCase());
    },
    eventHandlers: {
        weapon(w) {
            const damage: number = w.damage;
            log.push(String(damage));
        },
    },
    defaultHandler(type, data) {
        log.push(type + JSON.stringify(data));
    },
});
const userMessage = "build bow";
const scope: string = await session.send({ userMessage, damage: 40 });
await session.send({});
await session.chat("bow");
await session.sendData({ anything: "goes" });

// Named exports and the Quarkus names.
const again = await builder.connect({ messageHandler(text) { log.push(text); } });
again.close();
const menuName: "menu" = defaultRoute.name;

// Every JSON shape: structs, slices, maps, pointers, time, enums.
const size: Size = "large";
const line: Line = { item: "bow", quantity: 1, size, price: "150" };
const o = await order.connect({
    onReceipt(r: Receipt) {
        const city: string | undefined = r.customer?.city;
        const total: number = r.total;
        const when: string = r.at;
        const first: Line | undefined = r.lines?.[0];
        log.push(String(city) + total + when + first?.item + (r.Counts?.large ?? 0) + (r.note ?? ""));
    },
});
await o.send({
    lines: [line],
    customer: { name: "Ann", street: "Main", tags: null, extras: { floor: "2" } },
    due: new Date().toISOString(),
    gift: true,
    rate: 0.5,
    notes: { a: [1, 2], b: null },
});
await o.send({ customer: null, lines: null });

const w: Weapon = { name: "bow", damage: 1 };
const streaming: boolean = routes.stream.streaming;
try {
    await routes.admin.connect();
} catch (e) {
    if (e instanceof ChatFailure) {
        log.push(e.reason);
    }
}
console.log(scope, w, menuName, streaming, endpoint, client.sessions.size, log);
