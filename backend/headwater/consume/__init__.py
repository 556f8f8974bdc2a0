"""Events from Kafka: `headwater consume` ingests the OpenLineage events (and Trino query events)
that producers write to topics, in a consumer group, through the same ingest as HTTP.

A poll's messages are written in one transaction; a partition's offsets are committed only after
its events are committed in PostgreSQL, so a crash re-delivers and re-delivered events are
duplicates. Messages that cannot be ingested go to the ``kafka_dead_letters`` table.
"""
