// GraphiQL for Headwater: queries over HTTP POST, subscriptions over graphql-transport-ws, both on
// the endpoint named by the page's #graphiql element (data-endpoint, default /graphql).
import { createGraphiQLFetcher } from "@graphiql/toolkit";
import { GraphiQL } from "graphiql";
import "graphiql/style.css";
import { createClient } from "graphql-ws";
import { createElement } from "react";
import { createRoot } from "react-dom/client";

const DEFAULT_QUERY = `# Headwater's GraphQL API. Run with Ctrl-Enter or the play button;
# the Docs panel on the left lists every field.
{
  namespaces {
    name
  }
}
`;

const root = document.getElementById("graphiql");
const url = new URL(root.dataset.endpoint || "/graphql", window.location.href);
const wsUrl = new URL(url);
wsUrl.protocol = url.protocol === "https:" ? "wss:" : "ws:";

const fetcher = createGraphiQLFetcher({
  url: url.toString(),
  wsClient: createClient({ url: wsUrl.toString(), lazy: true }),
});

createRoot(root).render(
  createElement(GraphiQL, {
    fetcher,
    defaultQuery: DEFAULT_QUERY,
    defaultEditorToolsVisibility: true,
    isHeadersEditorEnabled: true,
    shouldPersistHeaders: false,
    inputValueDeprecation: true,
  }),
);
