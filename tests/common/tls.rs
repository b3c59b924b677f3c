//! A certificate authority made for one test, and the server and client
//! certificates it signs, written as PEM files the node and clients read.

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose};
use std::path::{Path, PathBuf};

pub struct TestCa {
    /// The CA certificate clients trust.
    pub ca: PathBuf,
    /// The node's certificate (for 127.0.0.1 and localhost) and key.
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    /// A client certificate and key the CA signed.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl TestCa {
    /// Makes a CA named `name` and its certificates under `dir`.
    pub fn new(dir: &Path, name: &str) -> TestCa {
        std::fs::create_dir_all(dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = params.self_signed(&ca_key).unwrap();
        let sign = |names: Vec<String>, usage: ExtendedKeyUsagePurpose| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(names).unwrap();
            params.extended_key_usages = vec![usage];
            (params.signed_by(&key, &ca, &ca_key).unwrap().pem(), key.serialize_pem())
        };
        let server = sign(vec!["127.0.0.1".into(), "localhost".into()], ExtendedKeyUsagePurpose::ServerAuth);
        let client = sign(vec!["client".into()], ExtendedKeyUsagePurpose::ClientAuth);
        let write = |file: &str, pem: &str| {
            let path = dir.join(file);
            std::fs::write(&path, pem).unwrap();
            path
        };
        TestCa {
            ca: write("ca.pem", &ca.pem()),
            server_cert: write("server.pem", &server.0),
            server_key: write("server.key", &server.1),
            client_cert: write("client.pem", &client.0),
            client_key: write("client.key", &client.1),
        }
    }

    /// An HTTPS client trusting this CA, presenting the client certificate
    /// when `with_client_cert`.
    pub fn http_client(&self, with_client_cert: bool) -> reqwest::Client {
        let ca = reqwest::Certificate::from_pem(&std::fs::read(&self.ca).unwrap()).unwrap();
        let mut builder =
            reqwest::Client::builder().use_rustls_tls().tls_built_in_root_certs(false).add_root_certificate(ca);
        if with_client_cert {
            let mut pem = std::fs::read(&self.client_cert).unwrap();
            pem.extend(std::fs::read(&self.client_key).unwrap());
            builder = builder.identity(reqwest::Identity::from_pem(&pem).unwrap());
        }
        builder.build().unwrap()
    }
}
