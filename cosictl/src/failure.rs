//! The error `cosictl` reports: a message for the user.

use crate::http::HttpError;

/// A failure to report: the message, already worded for the user.
pub struct Failure(pub String);

impl From<HttpError> for Failure {
    fn from(e: HttpError) -> Self {
        Failure(e.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure(format!("cannot write the output: {e}"))
    }
}
