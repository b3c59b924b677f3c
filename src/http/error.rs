//! Every HTTP refusal: JSON `{error, code}` with a stable `code` and the
//! status the client maps.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// A finer stable identifier under `code`, where a surface has one.
    pub reason: Option<&'static str>,
}

impl ApiError {
    /// The answer to a request refused before its body was read: the
    /// connection cannot carry another request, and saying so keeps a client
    /// from sending its next one on a connection the server is closing.
    pub fn before_the_body(self) -> Response {
        let mut answer = self.into_response();
        answer.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        answer
    }

    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), reason: None }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn with_reason(mut self, reason: &'static str) -> Self {
        self.reason = Some(reason);
        self
    }

    /// A push a full queue refuses: 409, the state of the queue, not 429.
    /// HTTP clients (queen-mq's `retry_429` among them) read 429 as rate
    /// limiting and retry it with backoff for minutes; a full queue stays
    /// full until its consumers acknowledge, which the producer must hear at
    /// once to shed load or wait on purpose.
    pub fn queue_full(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "queue_full", message)
    }

    /// The disk gate is closed.
    pub fn storage_full() -> Self {
        Self::new(StatusCode::INSUFFICIENT_STORAGE, "storage_full", "the data volume is nearly full (QUEEN_STORAGE_FULL_PCT): writes that grow storage are refused; reads, acks and deletes go on")
    }

    /// Stored data that cannot be read back.
    pub fn storage(e: impl std::fmt::Display) -> Self {
        tracing::error!("reading stored data failed: {e}");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "storage_error", format!("reading stored data failed: {e}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = serde_json::json!({ "error": self.message, "code": self.code });
        if let Some(reason) = self.reason {
            body["reason"] = reason.into();
        }
        (self.status, Json(body)).into_response()
    }
}

impl From<crate::replicate::ProposeError> for ApiError {
    fn from(e: crate::replicate::ProposeError) -> Self {
        let code = match e {
            crate::replicate::ProposeError::ShuttingDown => "retry",
            crate::replicate::ProposeError::LogFilesUnavailable => "log_files_unavailable",
            crate::replicate::ProposeError::NotLeader { .. } => "no_leader",
            crate::replicate::ProposeError::Timeout => "timeout",
            crate::replicate::ProposeError::NotAMember => "not_a_member",
        };
        Self::new(StatusCode::SERVICE_UNAVAILABLE, code, e.to_string())
    }
}

impl From<crate::share_groups::ShareGroupError> for ApiError {
    fn from(e: crate::share_groups::ShareGroupError) -> Self {
        use crate::share_groups::ShareGroupError;
        match e {
            ShareGroupError::Invalid(why) => Self::bad_request("invalid_share_group", why),
            ShareGroupError::NotYet => Self::new(StatusCode::SERVICE_UNAVAILABLE, "not_yet", e.to_string()),
            ShareGroupError::GroupsApart => Self::new(StatusCode::NOT_IMPLEMENTED, "unsupported", e.to_string()),
            ShareGroupError::Propose(e) => e.into(),
        }
    }
}

impl From<crate::encryption::EncryptionError> for ApiError {
    fn from(e: crate::encryption::EncryptionError) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "encryption_unavailable", e.to_string())
    }
}
