-- A run's COMPLETE rewrites its row with a larger one (its end, state, job version and the facets of
-- its end), and the runs of one page often complete in one transaction, whose old versions none of
-- its own writes can reclaim: with 60% of a page filled by inserts, the room left held the new
-- versions of two of a page's three runs, and the third moved to another page, an update no later
-- visit of the page can reclaim (a fifth of the runs' updates). The jobs of a page, each moved to its
-- latest run as that run completes, ran out of room the same way. Room left for each of them;
-- rewrites nothing now, applies to pages written next.
ALTER TABLE runs SET (fillfactor = 45);
ALTER TABLE jobs SET (fillfactor = 45);
