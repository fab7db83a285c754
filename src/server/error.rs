//! Errors as OpenAI's API shapes them: `{"error": {"message", "type", "param", "code"}}` with the
//! HTTP status that says whose fault it is. Every refusal names what it refuses (`param`: the
//! request field, the header or the model), so a client sees what to fix.
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// OpenAI's `type`: invalid_request_error, authentication_error, not_found_error, ...
    pub kind: &'static str,
    /// the request field (or header) at fault, when there is one
    pub param: Option<String>,
    pub code: Option<&'static str>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: Option<&'a str>,
}

impl ApiError {
    /// 400: a field's value (or presence) is wrong; the message starts with the field's name.
    pub fn field(param: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: format!("{param}: {}", message.into()),
            kind: "invalid_request_error",
            param: Some(param.to_string()),
            code: None,
        }
    }

    /// 400 for a field of the OpenAI schema this server does not implement.
    pub fn unsupported(param: &str) -> ApiError {
        let mut e = ApiError::field(
            param,
            "this field is not supported by wgllm serve (remove it or leave it null)",
        );
        e.code = Some("unsupported_parameter");
        e
    }

    /// 400 for a field that is not in the OpenAI schema at all.
    pub fn unknown(param: &str) -> ApiError {
        let mut e = ApiError::field(param, "unknown field");
        e.code = Some("unknown_parameter");
        e
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: None,
            code: None,
        }
    }

    /// 400: the prompt (`param`: messages or prompt) leaves no room in the context, or prompt +
    /// max_tokens does not fit it; the message carries both numbers.
    pub fn context_length(param: &str, message: String) -> ApiError {
        let mut e = ApiError::field(param, message);
        e.code = Some("context_length_exceeded");
        e
    }

    pub fn unauthorized() -> ApiError {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            message: "Authorization header: missing or wrong API key (send `Authorization: Bearer <key>`, the \
                      key given to --api-key)"
                .into(),
            kind: "authentication_error",
            param: Some("Authorization".into()),
            code: Some("invalid_api_key"),
        }
    }

    pub fn model_not_found(asked: &str, served: &str) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: format!("model: the model `{asked}` does not exist; this server serves `{served}`"),
            kind: "not_found_error",
            param: Some("model".into()),
            code: Some("model_not_found"),
        }
    }

    pub fn too_large(limit: usize) -> ApiError {
        ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            message: format!("request body: larger than the limit of {limit} bytes"),
            kind: "invalid_request_error",
            param: None,
            code: Some("request_too_large"),
        }
    }

    /// 429: the bounded queue is full; the client should retry later.
    pub fn queue_full(max: usize) -> ApiError {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: format!("the server's queue is full ({max} requests waiting or running); retry later"),
            kind: "rate_limit_error",
            param: None,
            code: Some("queue_full"),
        }
    }

    /// 503: not ready (the model is loading) or going away (shutting down).
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: message.into(),
            kind: "service_unavailable",
            param: None,
            code: None,
        }
    }

    pub fn not_found(path: &str) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: format!("no route {path}"),
            kind: "not_found_error",
            param: None,
            code: None,
        }
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: None,
        }
    }

    /// The JSON body (also sent as an SSE event when a stream fails midway).
    pub fn body(&self) -> String {
        serde_json::to_string(&Body {
            error: Inner {
                message: &self.message,
                kind: self.kind,
                param: self.param.as_deref(),
                code: self.code,
            },
        })
        .expect("an error body serializes")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body();
        (
            self.status,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }
}
