// Bundles browser.mjs with @ag-ui/client for the browser (esbuild, pinned
// by package-lock.json) into bundle.js, for the Chromium test of
// runtime/agui.
import { build } from "esbuild";

await build({
  entryPoints: ["browser.mjs"],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  outfile: "bundle.js",
  logLevel: "warning",
});
