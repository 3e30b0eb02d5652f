// A server's sign-in and roots in Settings → Tools (MCP).
//
// A remote server that asks for a sign-in says "Sign in required" with a Sign in button:
// the sign-in page opens in the system browser, and the row updates when the browser
// comes back (or the sign-in fails, with the reason). A remote server whose sign-in
// tokens are kept offers Sign out. Roots are the folders a server is told about when it asks (none unless the
// person lists some here, one full path a line).

import { api } from "./api.js";
import { h } from "./dom.js";
import { notifyError } from "./notices.js";

/**
 * The sign-in line of a remote server, or null for one that needs none.
 * @param {McpServerOut} server
 */
export function signInLine(server, refresh) {
  if (server.transport !== "http") {
    return null;
  }
  if (server.state === "stopped" && server.enabled) {
    // A remote server added a moment ago: connecting now tells whether it needs a sign-in
    // (else it would only say so with the next message).
    const connect = h("button", {
      type: "button",
      class: "button small",
      dataset: { connect: server.name },
      text: "Connect",
    });
    connect.addEventListener("click", async () => {
      connect.disabled = true;
      connect.textContent = "Connecting…";
      try {
        await api.restartMcpServer(server.name);
      } catch (error) {
        notifyError(`${server.name} could not be reached`, error);
      }
      await refresh();
    });
    return h(
      "div",
      { class: "mcp-sign-in" },
      h("span", { text: "Not connected yet; it connects with the next message." }),
      connect,
    );
  }
  const waiting = server.state === "signin_required";
  const button = h("button", {
    type: "button",
    class: ["button", "small", waiting && "primary"],
    dataset: { signIn: server.name },
    text: waiting ? "Sign in" : "Sign out",
  });
  button.addEventListener("click", async () => {
    button.disabled = true;
    button.textContent = waiting ? "Waiting for the browser…" : "Signing out…";
    try {
      const after = waiting
        ? await api.signInMcpServer(server.name)
        : await api.signOutMcpServer(server.name);
      if (waiting && after.state !== "running") {
        notifyError(`${server.name}: the sign-in did not finish`, new Error(after.error ?? ""));
      }
    } catch (error) {
      notifyError(`${server.name}: ${waiting ? "sign-in" : "sign-out"} failed`, error);
    }
    await refresh();
  });
  if (!waiting && !server.signedIn) {
    return null;
  }
  return h(
    "div",
    { class: "mcp-sign-in" },
    h("span", {
      text: waiting
        ? "This server needs you to sign in; its tools are offered once you have."
        : "Signed in; the tokens are kept in the key store.",
    }),
    button,
  );
}

/**
 * The roots editor: the folders this server may be told about.
 * @param {McpServerOut} server
 */
export function rootsEditor(server, refresh) {
  const text = h("textarea", {
    rows: Math.max(2, server.roots.length + 1),
    placeholder: "/full/path/of/a/folder (one a line; none by default)",
    "aria-label": `Folders ${server.name} may see`,
  });
  text.value = server.roots.join("\n");
  const save = h("button", {
    type: "button",
    class: "button small",
    dataset: { saveRoots: server.name },
    text: "Save folders",
  });
  save.addEventListener("click", async () => {
    save.disabled = true;
    const roots = text.value
      .split("\n")
      .map((line) => line.trim())
      .filter(Boolean);
    try {
      await api.setMcpRoots(server.name, roots);
      await refresh();
    } catch (error) {
      save.disabled = false;
      notifyError(`${server.name}: the folders were not saved`, error);
    }
  });
  return h(
    "details",
    { class: "mcp-roots" },
    h("summary", {
      text: server.roots.length
        ? `Folders it may see (${server.roots.length})`
        : "Folders it may see (none)",
    }),
    text,
    save,
  );
}
