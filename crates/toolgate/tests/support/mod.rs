//! What several of this crate's integration tests share.
#![allow(dead_code)]

pub mod exec;
pub mod mcp_http;
pub mod policy_server;
