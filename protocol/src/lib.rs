//! Kafka wire protocol codec (sans I/O). Arrives with the Kafka facade issue.
