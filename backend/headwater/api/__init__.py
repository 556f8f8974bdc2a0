"""HTTP edge: REST controllers and the GraphQL endpoint."""
