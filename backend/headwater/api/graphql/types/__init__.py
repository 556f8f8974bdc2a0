"""GraphQL object types, one family per module, each built from a store record with ``from_record``."""
