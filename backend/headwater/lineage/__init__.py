"""The lineage engine: graph walks over lineage_edges, bounded by depth."""
