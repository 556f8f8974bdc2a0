"""Headwater's web console: a page of ours and its built bundle, served by `headwater serve`."""
