// Must not compile (TestDeclarationsTypeCheck): each line with a "want:"
// comment has the error it names.
import { routes } from "@quarkiverse/chat-scopes-api";
import type { Diamond, Everything } from "@quarkiverse/chat-scopes-api";

function show(e: Everything): string {
    const lazy: string = e.lazy; // want: Type 'string | Lazy' is not assignable to type 'string'
    const lit: number = e.litStr; // want: Type 'unknown' is not assignable to type 'number'
    const quoted: string = e.quotePtr; // want: Type 'string | null' is not assignable to type 'string'
    return lazy + lit + quoted;
}

const d: Diamond = { L: 1, R: 2, X: 3 }; // want: 'X' does not exist in type 'Diamond'
const session = await routes.put.connect({
    onObject(data) {
        console.log(data.level); // want: 'data' is of type 'unknown'
    },
});
await session.send({ level: "loud" }); // want: Type '"loud"' is not assignable to type 'Level | undefined'
await session.send({ prio: 3 }); // want: Type '3' is not assignable to type 'Priority | undefined'
const report = await routes.report.connect();
await report.send({ report: { level: "debug" } }); // want: Property 'data' is missing
console.log(d, show);
