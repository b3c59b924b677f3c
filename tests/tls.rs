//! TLS on both listeners: Kafka (`SSL`) and HTTPS, with a CA made for the
//! test; a client that does not trust the CA is refused, and with a client
//! CA set, so is a client without a certificate it signed.

mod common;

use common::kafka::{two_large_batches, KafkaConn};
use common::tls::TestCa;
use common::Node;
use protocol::messages::{ApiKey, RequestKind, ResponseKind};
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

fn tls_env(ca: &TestCa) -> Vec<(&'static str, String)> {
    vec![
        ("QUEEN_TLS_CERT", ca.server_cert.display().to_string()),
        ("QUEEN_TLS_KEY", ca.server_key.display().to_string()),
    ]
}

fn env_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A Kafka connection over TLS trusting `trusted`'s CA, presenting
/// `client`'s certificate when given; Err when the handshake fails.
async fn kafka_tls(port: u16, trusted: &TestCa, client: Option<&TestCa>) -> std::io::Result<KafkaConn> {
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(&trusted.ca).unwrap()).unwrap();
    let builder = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(c) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_file(&c.client_cert).unwrap()],
                PrivateKeyDer::from_pem_file(&c.client_key).unwrap(),
            )
            .unwrap(),
    };
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let stream = TlsConnector::from(Arc::new(config)).connect(name, tcp).await?;
    Ok(KafkaConn::over(stream))
}

/// Whether an ApiVersions request is answered over `conn`. With TLS 1.3 a
/// refused client certificate shows only on the first read, so a request
/// is what proves a session served.
async fn answers(mut conn: KafkaConn) -> bool {
    let bytes =
        protocol::request::encode(ApiKey::ApiVersions, 3, 1, &RequestKind::ApiVersions(Default::default())).unwrap();
    conn.send_raw(&bytes).await;
    match conn.read_frame().await {
        Some(frame) => {
            matches!(protocol::response::decode(ApiKey::ApiVersions, 3, frame), Ok((1, ResponseKind::ApiVersions(_))))
        }
        None => false,
    }
}

async fn plain_kafka_answers(port: u16) -> bool {
    let Ok(conn) = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        let mut conn = KafkaConn::connect(port).await;
        let bytes = protocol::request::encode(ApiKey::ApiVersions, 3, 1, &RequestKind::ApiVersions(Default::default()))
            .unwrap();
        conn.send_raw(&bytes).await;
        conn.read_frame().await
    })
    .await
    else {
        return false;
    };
    conn.is_some()
}

#[tokio::test]
async fn kafka_over_tls_serves_a_client_trusting_the_ca_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(&dir.path().join("ca"), "Queen test CA");
    let stranger = TestCa::new(&dir.path().join("other"), "Another CA");
    let mut env = tls_env(&ca);
    env.push(("QUEEN_KAFKA_TLS", "true".into()));
    let node = Node::start(&dir.path().join("data"), &env_refs(&env)).await;

    assert!(answers(kafka_tls(node.kafka_port, &ca, None).await.unwrap()).await, "a client trusting the CA is served");
    assert!(
        kafka_tls(node.kafka_port, &stranger, None).await.is_err(),
        "a client trusting another CA refuses the node"
    );
    assert!(!plain_kafka_answers(node.kafka_port).await, "plain Kafka gets no answer from a TLS listener");
}

#[tokio::test]
async fn https_serves_a_client_trusting_the_ca_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(&dir.path().join("ca"), "Queen test CA");
    let stranger = TestCa::new(&dir.path().join("other"), "Another CA");
    let mut env = tls_env(&ca);
    env.push(("QUEEN_HTTP_TLS", "true".into()));
    let node = Node::start_with_client(&dir.path().join("data"), &env_refs(&env), ca.http_client(false)).await;

    let r = node.http.get(node.url("/health")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(stranger.http_client(false).get(node.url("/health")).send().await.is_err(), "another CA's client refuses");
    let plain = reqwest::get(format!("http://127.0.0.1:{}/health", node.port)).await;
    assert!(plain.is_err(), "plain HTTP is not served on an HTTPS listener: {plain:?}");
}

#[tokio::test]
async fn a_client_ca_requires_a_certificate_it_signed_on_both_listeners() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(&dir.path().join("ca"), "Queen test CA");
    let stranger = TestCa::new(&dir.path().join("other"), "Another CA");
    let mut env = tls_env(&ca);
    env.push(("QUEEN_TLS_CLIENT_CA", ca.ca.display().to_string()));
    env.push(("QUEEN_KAFKA_TLS", "true".into()));
    env.push(("QUEEN_HTTP_TLS", "true".into()));
    let node = Node::start_with_client(&dir.path().join("data"), &env_refs(&env), ca.http_client(true)).await;

    assert_eq!(node.http.get(node.url("/health")).send().await.unwrap().status(), 200);
    let without = ca.http_client(false).get(node.url("/health")).send().await;
    assert!(without.is_err(), "HTTPS without a client certificate is refused: {without:?}");

    assert!(answers(kafka_tls(node.kafka_port, &ca, Some(&ca)).await.unwrap()).await);
    let refused = |conn: std::io::Result<KafkaConn>| async move {
        match conn {
            Err(_) => true,
            Ok(conn) => !answers(conn).await,
        }
    };
    assert!(refused(kafka_tls(node.kafka_port, &ca, None).await).await, "Kafka without a client certificate");
    // The stranger's client certificate, the node's CA trusted.
    let mut mixed = TestCa::new(&dir.path().join("mixed"), "Queen test CA");
    mixed.client_cert = stranger.client_cert.clone();
    mixed.client_key = stranger.client_key.clone();
    assert!(refused(kafka_tls(node.kafka_port, &ca, Some(&mixed)).await).await, "a certificate another CA signed");
}

#[test]
fn a_bad_certificate_key_or_switch_is_fatal_at_boot_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(&dir.path().join("ca"), "Queen test CA");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a pem file").unwrap();
    let missing = dir.path().join("missing.pem");
    let (cert, key) = (ca.server_cert.display().to_string(), ca.server_key.display().to_string());
    let refusal = |env: &[(&str, &str)]| common::expect_refusal(&dir.path().join("data"), env);
    let path = |p: &Path| p.display().to_string();

    let log = refusal(&[("QUEEN_KAFKA_TLS", "true"), ("QUEEN_TLS_CERT", &path(&missing)), ("QUEEN_TLS_KEY", &key)]);
    assert!(log.contains("FATAL") && log.contains(&format!("the TLS certificate {}", path(&missing))), "{log}");

    let log = refusal(&[("QUEEN_HTTP_TLS", "true"), ("QUEEN_TLS_CERT", &cert), ("QUEEN_TLS_KEY", &path(&garbage))]);
    assert!(log.contains("FATAL") && log.contains(&format!("the TLS key {}", path(&garbage))), "{log}");

    let other = TestCa::new(&dir.path().join("other"), "Another CA");
    let log =
        refusal(&[("QUEEN_HTTP_TLS", "true"), ("QUEEN_TLS_CERT", &cert), ("QUEEN_TLS_KEY", &path(&other.server_key))]);
    assert!(log.contains("FATAL") && log.contains("do not serve together"), "{log}");

    let log = refusal(&[("QUEEN_TLS_CERT", &cert), ("QUEEN_TLS_KEY", &key)]);
    assert!(log.contains("neither QUEEN_KAFKA_TLS nor QUEEN_HTTP_TLS is on"), "{log}");

    let log = refusal(&[("QUEEN_KAFKA_TLS", "true")]);
    assert!(log.contains("QUEEN_TLS_CERT and QUEEN_TLS_KEY are not set"), "{log}");

    let log = refusal(&[
        ("QUEEN_KAFKA_TLS", "true"),
        ("QUEEN_TLS_CERT", &cert),
        ("QUEEN_TLS_KEY", &key),
        ("QUEEN_TLS_CLIENT_CA", &path(&garbage)),
    ]);
    assert!(log.contains(&format!("the TLS client CA {}", path(&garbage))), "{log}");
}

/// Over TLS the stored batches are encrypted by the node, so they are read
/// into it (one copy) rather than sent by the kernel: the same bytes arrive.
#[tokio::test]
async fn a_large_stored_batch_is_read_and_encrypted_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(&dir.path().join("ca"), "Queen test CA");
    let mut env = tls_env(&ca);
    env.push(("QUEEN_KAFKA_TLS", "true".into()));
    let node = Node::start(&dir.path().join("data"), &env_refs(&env)).await;
    let mut conn = kafka_tls(node.kafka_port, &ca, None).await.unwrap();
    let (sent, read) = ("queen_kafka_fetch_sendfile_bytes_total", "queen_kafka_fetch_read_bytes_total");
    let (produced_bytes, fetched) = two_large_batches(&mut conn, "read-for-tls", 48).await;
    let len = produced_bytes.len();
    assert_eq!(fetched.len(), 2 * len, "both batches, whole");
    assert_eq!(fetched[len + 16..], produced_bytes[16..], "the second batch as it came");
    assert_eq!(node.counter(sent).await, 0, "nothing is sent by sendfile under TLS");
    assert_eq!(node.counter(read).await, 2 * len as u64, "both batches were read to be encrypted");
}
