//! Amori e Intrighi on the server: its proto mapping (`proto.rs`), its bots (`bot.rs`) and what
//! ListGames tells of it (`catalogue.rs`).

mod bot;
mod catalogue;
mod proto;
