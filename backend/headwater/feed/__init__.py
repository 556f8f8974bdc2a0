"""The change feed: change_log rows, in id order, pushed to subscribers of this process.

One dedicated LISTEN connection per process wakes a single reader (``ChangeFeed``) after each
commit; the reader fetches the new rows once and fans them out to per-subscriber bounded queues.
"""
