//! Reading a JSON request body with refusals that name what is wrong, where
//! axum's own extractor would answer plain text.

use super::error::ApiError;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use serde_json::{Map, Value};

/// The body's bytes, or why they could not be read.
pub fn body_bytes(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                "the request body is larger than QUEEN_HTTP_MAX_BODY_BYTES",
            )
        } else {
            ApiError::bad_request("unreadable_body", e.body_text())
        }
    })
}

/// The body as a JSON object.
pub fn json_object(body: Result<Bytes, BytesRejection>) -> Result<Map<String, Value>, ApiError> {
    json_map(&body_bytes(body)?)
}

/// Bytes that must be one JSON object.
pub fn json_map(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::bad_request("invalid_body", "the request body must be a JSON object")),
        Err(e) => Err(ApiError::bad_request("invalid_json", format!("the request body is not valid JSON: {e}"))),
    }
}

/// Typed field access whose errors name the field.
pub struct Fields<'a> {
    pub map: &'a Map<String, Value>,
    pub path: String,
}

impl<'a> Fields<'a> {
    pub fn new(map: &'a Map<String, Value>, path: impl Into<String>) -> Self {
        Self { map, path: path.into() }
    }

    fn name(&self, field: &str) -> String {
        if self.path.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", self.path)
        }
    }

    pub fn missing(&self, field: &str) -> ApiError {
        ApiError::bad_request("missing_field", format!("{} is required", self.name(field)))
    }

    pub fn mistyped(&self, field: &str, wanted: &str) -> ApiError {
        ApiError::bad_request("invalid_field", format!("{} must be {wanted}", self.name(field)))
    }

    pub fn opt_str(&self, field: &str) -> Result<Option<&'a str>, ApiError> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.mistyped(field, "a string")),
        }
    }

    /// A required, non-empty string.
    pub fn name_str(&self, field: &str) -> Result<&'a str, ApiError> {
        match self.opt_str(field)? {
            Some(s) if !s.is_empty() => Ok(s),
            Some(_) => Err(self.mistyped(field, "a non-empty string")),
            None => Err(self.missing(field)),
        }
    }

    pub fn opt_u64(&self, field: &str) -> Result<Option<u64>, ApiError> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| self.mistyped(field, "a non-negative integer")),
        }
    }

    pub fn array(&self, field: &str) -> Result<&'a Vec<Value>, ApiError> {
        match self.map.get(field) {
            None => Err(self.missing(field)),
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err(self.mistyped(field, "an array")),
        }
    }
}

/// The objects of an array field, each with its own path for errors.
pub fn objects<'a>(items: &'a [Value], path: &str) -> Result<Vec<Fields<'a>>, ApiError> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Object(m) => Ok(Fields::new(m, format!("{path}[{i}]"))),
            _ => Err(ApiError::bad_request("invalid_field", format!("{path}[{i}] must be an object"))),
        })
        .collect()
}

/// The `operations` of a batch call (`{"operations": [...]}`, or a bare
/// array), at most `max` of them. `bad` makes the surface's own refusal from
/// a reason ("body" or "too_many_ops") and a message.
pub fn operations(
    body: Result<Bytes, BytesRejection>,
    max: usize,
    bad: impl Fn(&'static str, String) -> ApiError,
) -> Result<Vec<Value>, ApiError> {
    let body = body.map_err(|e| bad("body", e.body_text()))?;
    let parsed: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("the request body is not valid JSON: {e}")))?;
    let ops = match parsed {
        Value::Array(a) => a,
        Value::Object(mut m) => match m.remove("operations") {
            Some(Value::Array(a)) => a,
            _ => return Err(bad("body", "the body holds an operations array".into())),
        },
        _ => return Err(bad("body", "the body is an object with an operations array".into())),
    };
    if ops.len() > max {
        return Err(bad("too_many_ops", format!("a call holds at most {max} operations")));
    }
    Ok(ops)
}

/// A JSON object body that may be absent (the client sends no body for `{}`).
pub fn optional_object(body: &Bytes) -> Result<Option<Map<String, Value>>, ApiError> {
    if body.is_empty() {
        return Ok(None);
    }
    match serde_json::from_slice(body) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(Value::Null) => Ok(None),
        Ok(_) => Err(ApiError::bad_request("invalid_body", "the request body must be a JSON object")),
        Err(e) => Err(ApiError::bad_request("invalid_json", format!("the request body is not valid JSON: {e}"))),
    }
}

/// A non-negative integer query parameter, if given.
pub fn query_u64(q: &std::collections::HashMap<String, String>, name: &str) -> Result<Option<u64>, ApiError> {
    q.get(name)
        .map(|v| {
            v.parse::<u64>().map_err(|_| {
                ApiError::bad_request("invalid_field", format!("{name} must be a non-negative integer, not {v:?}"))
            })
        })
        .transpose()
}

/// A listing's `limit` (100 unless given, 1 to 1000) and `offset`.
pub fn page(q: &std::collections::HashMap<String, String>) -> Result<(usize, usize), ApiError> {
    let limit = (query_u64(q, "limit")?.unwrap_or(100) as usize).clamp(1, 1000);
    Ok((limit, query_u64(q, "offset")?.unwrap_or(0) as usize))
}

/// A query parameter that must be present and not empty.
pub fn required_query<'a>(q: &'a std::collections::HashMap<String, String>, name: &str) -> Result<&'a str, ApiError> {
    q.get(name)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::bad_request("missing_field", format!("{name} is required")))
}
