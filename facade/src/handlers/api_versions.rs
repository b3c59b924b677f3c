//! ApiVersions: the table of `protocol::versions`, nothing more.

use protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};

pub fn handle(_req: ApiVersionsRequest, _version: i16) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(protocol::versions::api_versions())
}
