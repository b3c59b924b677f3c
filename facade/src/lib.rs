//! Kafka listener and per-API handlers. Arrives with the Kafka facade issue.
