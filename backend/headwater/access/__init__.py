"""Who may do what: API keys with scopes, checked on every request once any key exists."""
