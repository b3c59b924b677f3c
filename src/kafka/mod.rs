//! The Kafka front end: the `facade` crate's listener, served over this
//! node through [`broker::QueenBroker`], which turns each Kafka operation
//! into the planner commands the HTTP API uses.

pub(crate) mod broker;
pub(crate) mod records;
pub(crate) mod time_index;

use crate::auth_policy::named_mechanisms;
use crate::config::{OpenOnPurpose, Settings};
use crate::jwt::Auth;
use crate::node::Node;
use facade::sasl::{Mechanism, SaslConfig, TokenVerifier};
use facade::tls::TlsAcceptor;
use facade::{DecompressBudget, Facade, FacadeConfig};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Binds the Kafka listener; the caller turns a failure into a FATAL line.
pub async fn bind(node: &Node) -> std::io::Result<TcpListener> {
    TcpListener::bind(node.settings.kafka_addr).await
}

/// Serves Kafka clients on `listener` for the life of the process, over
/// TLS when `tls` is given.
pub async fn serve(node: Arc<Node>, listener: TcpListener, mut config: FacadeConfig, tls: Option<TlsAcceptor>) {
    config.file_bytes_sent = node.metrics.kafka_file_bytes.clone();
    tracing::info!(
        addr = %node.settings.kafka_addr,
        advertised = %format!("{}:{}", config.advertised_host, config.advertised_port),
        sasl = config.sasl.is_some(),
        tls = tls.is_some(),
        "kafka listener ready"
    );
    let facade = Facade::new(Arc::new(broker::QueenBroker::new(node.clone())), config);
    // Only one listener runs per node; the first set is the one there is.
    let _ = node.kafka_share_members.set(facade.share_groups.clone());
    facade::serve(listener, facade, tls).await;
}

/// The listener's configuration from the settings, or the setting that is
/// wrong. `tokens`: the node's JWT checker, for OAUTHBEARER.
pub fn config(s: &Settings, bound: SocketAddr, tokens: Option<Arc<Auth>>) -> Result<FacadeConfig, String> {
    let (host, port) = match s.kafka_advertised.as_deref() {
        Some(a) => {
            let (host, port) = a.rsplit_once(':').ok_or(format!("QUEEN_KAFKA_ADVERTISED={a:?} is not host:port"))?;
            let port = port.parse::<u16>().map_err(|_| format!("QUEEN_KAFKA_ADVERTISED={a:?} has no valid port"))?;
            (host.to_string(), port as i32)
        }
        None if bound.ip().is_unspecified() => ("127.0.0.1".to_string(), bound.port() as i32),
        None => (bound.ip().to_string(), bound.port() as i32),
    };
    Ok(FacadeConfig {
        // In a cluster each node is its own broker, named by its raft id.
        node_id: s.raft_node_id.map_or(1, |id| id as i32),
        advertised_host: host,
        advertised_port: port,
        cluster_id: "queen".to_string(),
        max_request_bytes: s.kafka_max_request_bytes,
        message_max_bytes: s.kafka_message_max_bytes,
        transaction_max_timeout_ms: s.kafka_transaction_max_timeout_ms,
        max_connections: s.kafka_max_connections,
        auto_create_topics: s.kafka_auto_create_topics,
        num_partitions: s.kafka_num_partitions,
        initial_rebalance_delay: Duration::from_millis(s.kafka_initial_rebalance_delay_ms),
        consumer_session_timeout: Duration::from_millis(s.kafka_consumer_session_timeout_ms),
        consumer_heartbeat_interval: Duration::from_millis(s.kafka_consumer_heartbeat_interval_ms),
        request_read_timeout: Duration::from_millis(s.kafka_request_read_timeout_ms),
        connections_max_idle: Duration::from_millis(s.kafka_connections_max_idle_ms),
        decompress_budget: DecompressBudget::new(s.decompress_budget_bytes as usize),
        sasl: sasl(s, tokens)?,
        file_bytes_sent: Default::default(),
    })
}

/// SASL as the settings ask: the named mechanisms, and OAUTHBEARER with the
/// node's JWT checker whenever JWT is on (unless QUEEN_KAFKA_AUTH=open).
fn sasl(s: &Settings, tokens: Option<Arc<Auth>>) -> Result<Option<SaslConfig>, String> {
    let pairs: Vec<&str> = s.kafka_sasl_users.split(',').map(str::trim).filter(|u| !u.is_empty()).collect();
    let mut mechanisms = named_mechanisms(s)
        .iter()
        .map(|n| {
            Mechanism::parse(n).ok_or(format!(
                "QUEEN_KAFKA_SASL_MECHANISMS: unknown mechanism {n:?} (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)"
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let tokens = tokens.filter(|_| s.kafka_auth != Some(OpenOnPurpose::Open));
    match (&tokens, mechanisms.contains(&Mechanism::OAuthBearer)) {
        (None, true) => {
            return Err("QUEEN_KAFKA_SASL_MECHANISMS names OAUTHBEARER, which checks the tokens of JWT_ENABLED=true, and JWT is off".to_string())
        }
        (Some(_), false) => mechanisms.push(Mechanism::OAuthBearer),
        _ => {}
    }
    let passwords = mechanisms.iter().any(|m| *m != Mechanism::OAuthBearer);
    if !pairs.is_empty() && !passwords {
        return Err("QUEEN_KAFKA_SASL_USERS is set but QUEEN_KAFKA_SASL_MECHANISMS names no PLAIN or SCRAM mechanism"
            .to_string());
    }
    if mechanisms.is_empty() {
        return Ok(None);
    }
    let users = pairs
        .iter()
        .map(|p| {
            p.split_once(':')
                .filter(|(u, pw)| !u.is_empty() && !pw.is_empty())
                .map(|(u, pw)| (u.to_string(), pw.to_string()))
                .ok_or("QUEEN_KAFKA_SASL_USERS: each entry is user:password".to_string())
        })
        .collect::<Result<HashMap<_, _>, _>>()?;
    if passwords && users.is_empty() {
        return Err("QUEEN_KAFKA_SASL_MECHANISMS names a password mechanism but QUEEN_KAFKA_SASL_USERS names no user"
            .to_string());
    }
    Ok(Some(SaslConfig { mechanisms, users, tokens: tokens.map(|t| t as Arc<dyn TokenVerifier>) }))
}
