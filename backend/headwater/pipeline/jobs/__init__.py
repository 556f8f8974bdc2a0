"""Pure steps of the Spark jobs: DataFrame (or row iterator) in, DataFrame (or rows) out, no I/O."""
