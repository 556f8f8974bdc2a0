"""The GraphQL API: catalog queries, lineage, mutations and the lineage-change subscription."""
