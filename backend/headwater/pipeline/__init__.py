"""`headwater spark ...`: bulk backfill of event archives, lineage export and asset heat on PySpark.

Imported only by the `headwater spark` command: the server never imports this package (pyspark is
the optional extra ``[spark]``). ``jobs/`` holds the pure DataFrame steps; the modules beside it
read archives and the database, drive Spark and print progress.
"""
