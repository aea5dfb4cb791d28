-- Run once, when Postgres initialises its data folder: the statistics
-- behind the exporter's pg_stat_statements metrics.
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
