//! Whole matches and error cases over HTTP/JSON and Server-Sent Events.
