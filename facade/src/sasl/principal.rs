//! Who a connection authenticated as and what it may do: one model for both
//! front ends. The `queen` crate checks bearer tokens (JWT) for HTTP and,
//! through [`TokenVerifier`], for Kafka's OAUTHBEARER, so a token means the
//! same on either port.

/// What a principal may do, each role allowing all the one below it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Read: metadata, fetch, offsets, configs, group descriptions.
    ReadOnly,
    /// Also produce, consume in a group and commit, create topics.
    ReadWrite,
    /// Also delete topics, records and groups, and alter what exists.
    Admin,
}

impl Role {
    /// A role as tokens name it in their `role` or `roles` claim.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "read-only" => Some(Self::ReadOnly),
            "read-write" => Some(Self::ReadWrite),
            "admin" => Some(Self::Admin),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::ReadWrite => "read-write",
            Self::Admin => "admin",
        }
    }
}

/// An authenticated identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The SASL user, or the token's subject; for log lines.
    pub name: String,
    /// A verified token's `sub` claim: the producer identity stamped on
    /// what this principal produces (`producerSub`). None for PLAIN and
    /// SCRAM users.
    pub subject: Option<String>,
    pub role: Role,
    /// When the credential stops being valid (a token's `exp`), in
    /// milliseconds since the Unix epoch; None for a password.
    pub expires_at_ms: Option<i64>,
}

impl Principal {
    /// A PLAIN or SCRAM user: the listener's users have every permission.
    pub fn user(name: String) -> Self {
        Self { name, subject: None, role: Role::Admin, expires_at_ms: None }
    }
}

/// Checks bearer tokens (OAUTHBEARER); the `queen` crate implements it with
/// the JWT settings its HTTP API uses.
pub trait TokenVerifier: Send + Sync {
    /// The principal `token` authenticates, or why it authenticates none.
    fn verify(&self, token: &str) -> Result<Principal, String>;
}
