"""io.hf: the Hugging Face codec (schema, PNG, parquet shards, reading a repository folder back); knows no dataset."""
