//! Amori e Intrighi on the server: its proto mapping (`proto.rs`) and its bots (`bot.rs`).

mod bot;
mod proto;
