//! CreateMatch, and its retry by request id.

use super::*;

/// Whether two creations come from the same request: the same game options, seats, timing
/// and bots. What the server adds of its own (a bot's drawn nonce) is not compared.
pub(super) fn same_creation(stored: &Creation, new: &Creation) -> bool {
    let bots = |c: &Creation| -> Vec<(u8, String)> {
        c.bots
            .iter()
            .map(|b| (b.seat, b.strategy.clone()))
            .collect()
    };
    stored.config == new.config
        && stored.seat_count == new.seat_count
        && stored.fixed_deck == new.fixed_deck
        && stored.turn_timeout_secs == new.turn_timeout_secs
        && stored.turn_reminder_secs == new.turn_reminder_secs
        && stored.deal_at_start == new.deal_at_start
        && stored.invited == new.invited
        && stored.rematch_of == new.rematch_of
        && bots(stored) == bots(new)
}

impl Service {
    /// CreateMatch with no client to hold to limits (the server's own tools and tests).
    pub async fn create_match(
        &self,
        req: pb::CreateMatchRequest,
    ) -> ApiResult<pb::CreateMatchResponse> {
        self.create_match_by(None, req).await
    }

    /// CreateMatch for `client`, held to its creation rate (each bot seat counting as one
    /// creation more) and its cap on open matches (those still waiting for players, which it
    /// can cancel or which expire), once the request is known to be valid.
    /// The cap is counted in the store, so it holds across replicas, give or take creations
    /// racing on several of them at once.
    pub async fn create_match_by(
        &self,
        client: Option<&crate::ratelimit::Client>,
        req: pb::CreateMatchRequest,
    ) -> ApiResult<pb::CreateMatchResponse> {
        let request_id =
            limits::optional_request_id("requestId", &req.request_id, 1)?.map(str::to_owned);
        crate::telemetry::record_request_id(request_id.as_deref());
        self.create(client, req, request_id.as_deref(), None).await
    }

    /// Creates a match under a request id already checked (or the server's own, for the
    /// rematch of `rematch_of`), for `client` if it is held to limits.
    pub(super) async fn create(
        &self,
        client: Option<&crate::ratelimit::Client>,
        req: pb::CreateMatchRequest,
        request_id: Option<&str>,
        rematch_of: Option<MatchId>,
    ) -> ApiResult<pb::CreateMatchResponse> {
        let options = req
            .options
            .ok_or_else(|| ApiError::invalid("options are required"))?;
        let seats = match req.seat_count {
            0 => 2,
            n => {
                u8::try_from(n).map_err(|_| ApiError::invalid(format!("{n} seats is too many")))?
            }
        };
        let (game, parsed) = self.games.parse_options(&options, Some(seats))?;
        if parsed.fixed_deck && !self.settings.allow_fixed_deck {
            return Err(ApiError::PermissionDenied(
                "fixed decks are disabled on this server (MISSIVE_ALLOW_FIXED_DECK)".into(),
            ));
        }
        limits::turn_secs("turnTimeoutSecs", req.turn_timeout_secs)?;
        limits::turn_secs("turnReminderSecs", req.turn_reminder_secs)?;
        if let Some(early) = req.turn_reminder_secs {
            match req.turn_timeout_secs {
                None => {
                    return Err(ApiError::invalid(
                        "turnReminderSecs needs turnTimeoutSecs: a reminder comes before a deadline",
                    ));
                }
                Some(timeout) if early == 0 || early >= timeout => {
                    return Err(ApiError::invalid(format!(
                        "turnReminderSecs must be at least 1 and less than turnTimeoutSecs ({timeout})"
                    )));
                }
                Some(_) => {}
            }
        }
        let seed = auth::random_bytes()?;
        let seed_hash: [u8; 32] = Sha256::digest(seed).into();
        let now = self.settings.clock.now();
        let mut bot_seats = std::collections::BTreeMap::new();
        for bot in &req.bots {
            let seat = u8::try_from(bot.seat)
                .ok()
                .filter(|s| *s < seats)
                .ok_or_else(|| {
                    ApiError::invalid(format!(
                        "bot seat {} does not exist (seats 0 to {})",
                        bot.seat,
                        seats - 1
                    ))
                })?;
            limits::text("bots.strategy", &bot.strategy, limits::MAX_STRATEGY)?;
            let strategy = bots::strategy(&bot.strategy).map_err(ApiError::invalid)?;
            let nonce = if bot.nonce.is_empty() {
                deal::random_nonce()?
            } else {
                deal::check_nonce(&bot.nonce)
                    .map_err(|e| ApiError::invalid(format!("bots: {e}")))?;
                bot.nonce.clone()
            };
            if bot_seats.insert(seat, (strategy, nonce)).is_some() {
                return Err(ApiError::invalid(format!("seat {seat} is given two bots")));
            }
        }
        let mut invited = std::collections::BTreeSet::new();
        for &seat in &req.invite_seats {
            let seat = u8::try_from(seat)
                .ok()
                .filter(|s| *s < seats)
                .ok_or_else(|| {
                    ApiError::invalid(format!(
                        "invited seat {seat} does not exist (seats 0 to {})",
                        seats - 1
                    ))
                })?;
            if bot_seats.contains_key(&seat) {
                return Err(ApiError::invalid(format!(
                    "seat {seat} is a bot's; it cannot be invited"
                )));
            }
            if !invited.insert(seat) {
                return Err(ApiError::invalid(format!("seat {seat} is invited twice")));
            }
        }
        let creation = Creation {
            config: parsed.config.clone(),
            seat_count: seats,
            fixed_deck: parsed.fixed_deck,
            turn_timeout_secs: req.turn_timeout_secs,
            turn_reminder_secs: req.turn_reminder_secs,
            bots: bot_seats
                .iter()
                .map(|(&seat, (strategy, nonce))| Bot {
                    seat,
                    strategy: (*strategy).to_owned(),
                    nonce: Some(nonce.clone()),
                })
                .collect(),
            deal_at_start: true,
            invited: invited.iter().copied().collect(),
            rematch_of,
        };
        let first = Event::Created(creation.clone());
        let taken: Vec<SeatRecord> = bot_seats
            .iter()
            .map(|(&seat, (strategy, _))| SeatRecord {
                seat,
                player: Some(bots::player_name(strategy)),
                token_hash: None,
                bot: Some((*strategy).to_owned()),
                account: None,
                invited: false,
            })
            .collect();
        // A retried creation names the match its first attempt created.
        let keys = self.keys().await?;
        let id = match request_id {
            Some(request_id) => keys.match_id(request_id),
            None => uuid::Uuid::new_v4(),
        };
        let invites = Self::invites(keys, id, &creation);
        // Invited seats are written with the match, free and held.
        let start_seats: Vec<SeatRecord> = taken
            .iter()
            .cloned()
            .chain(invited.iter().map(|&seat| SeatRecord {
                seat,
                invited: true,
                ..SeatRecord::default()
            }))
            .collect();
        crate::telemetry::record_match(id);
        let creator = client.map(|c| c.key.to_string());
        if let Some(client) = client {
            client.limiter.check_create(&client.key, bot_seats.len())?;
            let cap = client.limiter.settings().max_open_matches;
            let creator = creator.as_deref().unwrap_or_default();
            if cap > 0 && self.store.open_by_creator(creator, cap).await? >= cap {
                // A retry of a creation that went through answers what it created.
                if request_id.is_some()
                    && let Ok(again) = self.created_again(id, &creation).await
                {
                    return Ok(again);
                }
                return Err(client
                    .limiter
                    .too_many_open_matches(self.settings.open_match_expiry));
            }
        }
        // Nothing is dealt until every seat is held: at once when every seat is a bot.
        let version = game.rules_version();
        let mut table = Table::new(game.clone(), &parsed.config, seats, seed, (version, true))?;
        table.apply(1, &first)?;
        // The match before its first event, moved past it by the rule every event follows.
        let mut record = MatchRecord {
            id,
            kind: game.kind().to_owned(),
            config: serde_json::Value::Null,
            rules_version: version,
            seat_count: seats,
            seats: SeatRecord::all(seats, &[]),
            status: MatchStatus::Open,
            seed_hash,
            turn_timeout_secs: req.turn_timeout_secs,
            turn_reminder_secs: req.turn_reminder_secs,
            created_at: now,
            updated_at: now,
            version: 0,
        };
        let mut deadlines = Deadlines::new();
        advance(&mut record, &mut deadlines, &first, 1, now, table.state());
        let turns = pending_turns(&record, &deadlines, table.state(), now);
        let wake = turns.as_ref().is_some_and(|t| !t.is_empty());
        let created = self
            .store
            .create_match(
                NewMatch {
                    id,
                    kind: game.kind().to_owned(),
                    config: parsed.config,
                    rules_version: game.rules_version(),
                    seat_count: seats,
                    seed,
                    seed_hash,
                    turn_timeout_secs: req.turn_timeout_secs,
                    turn_reminder_secs: req.turn_reminder_secs,
                    created_at: now,
                    creator,
                    start: MatchUpdate {
                        status: Some(record.status),
                        seats: start_seats,
                        turns,
                        notify: Vec::new(),
                    },
                },
                vec![NewEvent {
                    kind: kinds::CREATED.into(),
                    actor: None,
                    request_id: None,
                    payload: first.payload(),
                    at: now,
                }],
            )
            .await;
        let (record, events) = match created {
            Err(StoreError::AlreadyExists(_)) if request_id.is_some() => {
                return self.created_again(id, &creation).await;
            }
            created => created?,
        };
        tracing::info!(match_id = %id, kind = game.kind(), seats, "match created");
        if wake {
            self.turns_written.notify_one();
        }
        let info = self.info(&record, game.as_ref()).await?;
        let slot = self.slot(id);
        let mut guard = slot.lock().await;
        if guard.is_none() && record.version == events.last().map_or(0, |e| e.seq) {
            // A new match awaits no human seat yet: open, or all bots.
            let mut live = Live::new(record, table, true, HashMap::new());
            // Kept for the reveal at the end, which then needs no read of it.
            live.seed = Some(seed);
            *guard = Some(live);
        }
        Ok(pb::CreateMatchResponse {
            r#match: Some(info),
            invites,
            cancel_token: keys.cancel_token(id),
        })
    }

    /// The invite codes of a creation's invited seats.
    fn invites(keys: &Keys, id: MatchId, creation: &Creation) -> Vec<pb::Invite> {
        creation
            .invited
            .iter()
            .map(|&seat| pb::Invite {
                seat: seat.into(),
                code: keys.invite_code(id, seat),
            })
            .collect()
    }

    /// The answer to a creation retried with its request id: the match the first attempt
    /// created, as it is now, if it was created from the same request.
    pub(super) async fn created_again(
        &self,
        id: MatchId,
        creation: &Creation,
    ) -> ApiResult<pb::CreateMatchResponse> {
        let first = self.store.read_events(id, 0, 1).await?;
        let same = first.first().map(Event::of).transpose()?.is_some_and(
            |e| matches!(e, Event::Created(stored) if same_creation(&stored, creation)),
        );
        if !same {
            return Err(request_id_reused());
        }
        let record = self.store.get_match(id).await?;
        let game = self.games.get(&record.kind)?.clone();
        let keys = self.keys().await?;
        Ok(pb::CreateMatchResponse {
            r#match: Some(self.info(&record, game.as_ref()).await?),
            invites: Self::invites(keys, id, creation),
            cancel_token: keys.cancel_token(id),
        })
    }
}
