//! CreateMatch, and its retry by request id: a command like the others. The request is
//! checked and the match's seed and its bots' nonces are drawn ([`Create::new`]); then the
//! write path every command takes ([`Service::write`]) decides the first event from the match
//! before it (a blank [`Live`]), has the store create the match with it, and folds it in.

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
        let request_id = request_id_named(&req.request_id)?.map(str::to_owned);
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
        let keys = self.keys().await?;
        // A retried creation names the match its first attempt created.
        let id = match request_id {
            Some(request_id) => keys.match_id(request_id),
            None => uuid::Uuid::new_v4(),
        };
        let allow_fixed_deck = self.settings.allow_fixed_deck;
        let mut create = Create::new(&self.games, allow_fixed_deck, keys, id, req, rematch_of)?;
        crate::telemetry::record_match(id);
        if let Some(client) = client {
            let creator = client.key.to_string();
            client
                .limiter
                .check_create(&client.key, create.creation.bots.len())?;
            let cap = client.limiter.settings().max_open_matches;
            if cap > 0 && self.store.open_by_creator(&creator, cap).await? >= cap {
                // A retry of a creation that went through answers what it created.
                if request_id.is_some()
                    && let Ok(again) = self.created_again(id, &create.creation).await
                {
                    return Ok(again);
                }
                return Err(client
                    .limiter
                    .too_many_open_matches(self.settings.open_match_expiry));
            }
            create.creator = Some(creator);
        }
        self.write(id, &create).await
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
            invites: Service::invites(keys, id, creation),
            cancel_token: keys.cancel_token(id),
        })
    }
}

/// A match to create, from a request found valid.
pub(super) struct Create<'a> {
    id: MatchId,
    game: Arc<dyn GameKind>,
    /// What the created event records.
    creation: Creation,
    seed: [u8; 32],
    /// The client that creates it, counted against its cap on open matches.
    creator: Option<String>,
    keys: &'a Keys,
}

impl<'a> Create<'a> {
    /// Checks the request and draws what the server adds to it: the match's seed, and a nonce
    /// for each bot that brings none.
    pub(super) fn new(
        games: &Registry,
        allow_fixed_deck: bool,
        keys: &'a Keys,
        id: MatchId,
        req: pb::CreateMatchRequest,
        rematch_of: Option<MatchId>,
    ) -> ApiResult<Create<'a>> {
        let options = req
            .options
            .ok_or_else(|| ApiError::invalid("options are required"))?;
        let seats = match req.seat_count {
            0 => 2,
            n => {
                u8::try_from(n).map_err(|_| ApiError::invalid(format!("{n} seats is too many")))?
            }
        };
        let (game, parsed) = games.parse_options(&options, Some(seats))?;
        if parsed.fixed_deck && !allow_fixed_deck {
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
        let mut bots = std::collections::BTreeMap::new();
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
            let bot = Bot {
                seat,
                strategy: strategy.to_owned(),
                nonce: Some(nonce),
            };
            if bots.insert(seat, bot).is_some() {
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
            if bots.contains_key(&seat) {
                return Err(ApiError::invalid(format!(
                    "seat {seat} is a bot's; it cannot be invited"
                )));
            }
            if !invited.insert(seat) {
                return Err(ApiError::invalid(format!("seat {seat} is invited twice")));
            }
        }
        let creation = Creation {
            config: parsed.config,
            seat_count: seats,
            fixed_deck: parsed.fixed_deck,
            turn_timeout_secs: req.turn_timeout_secs,
            turn_reminder_secs: req.turn_reminder_secs,
            bots: bots.into_values().collect(),
            deal_at_start: true,
            invited: invited.into_iter().collect(),
            rematch_of,
        };
        Ok(Create {
            id,
            game: game.clone(),
            creation,
            seed,
            creator: None,
            keys,
        })
    }

    /// The seats written with the match: its bots', taken, and its invited seats, free and
    /// held.
    fn start_seats(&self) -> Vec<SeatRecord> {
        let bots = self.creation.bots.iter().map(|bot| SeatRecord {
            seat: bot.seat,
            player: Some(bots::player_name(&bot.strategy)),
            bot: Some(bot.strategy.clone()),
            ..SeatRecord::default()
        });
        let invited = self.creation.invited.iter().map(|&seat| SeatRecord {
            seat,
            invited: true,
            ..SeatRecord::default()
        });
        bots.chain(invited).collect()
    }
}

impl Command for Create<'_> {
    type Plan = ();
    type Answer = pb::CreateMatchResponse;

    fn blank(&self, at: DateTime<Utc>) -> ApiResult<Option<Live>> {
        let c = &self.creation;
        let version = self.game.rules_version();
        // Nothing is dealt until every seat is held: at once when every seat is a bot.
        let table = Table::new(
            self.game.clone(),
            &c.config,
            c.seat_count,
            self.seed,
            (version, c.deal_at_start),
        )?;
        let record = MatchRecord {
            id: self.id,
            kind: self.game.kind().to_owned(),
            config: c.config.clone(),
            rules_version: version,
            seat_count: c.seat_count,
            seats: SeatRecord::all(c.seat_count, &[]),
            status: MatchStatus::Open,
            seed_hash: Sha256::digest(self.seed).into(),
            turn_timeout_secs: c.turn_timeout_secs,
            turn_reminder_secs: c.turn_reminder_secs,
            created_at: at,
            updated_at: at,
            version: 0,
        };
        let mut live = Live::new(record, table, true, HashMap::new());
        // Kept for the reveal at the end, which then needs no read of it.
        live.seed = Some(self.seed);
        Ok(Some(live))
    }

    fn decide(&self, live: &Live, _fresh: bool, at: DateTime<Utc>) -> ApiResult<Decision<()>> {
        if live.record.version > 0 {
            // This server holds the match already: the request is a retry.
            return Ok(Decision::Again(1, ()));
        }
        let event = Event::Created(self.creation.clone());
        let mut table = live.table.clone();
        let observations = table.apply(1, &event)?;
        let after = live.after(&event, table.state(), at);
        let record = &live.record;
        let creates = NewMatch {
            id: self.id,
            kind: record.kind.clone(),
            config: record.config.clone(),
            rules_version: record.rules_version,
            seat_count: record.seat_count,
            seed: self.seed,
            seed_hash: record.seed_hash,
            turn_timeout_secs: record.turn_timeout_secs,
            turn_reminder_secs: record.turn_reminder_secs,
            created_at: at,
            creator: self.creator.clone(),
            start: MatchUpdate::default(),
        };
        let update = after.update(self.start_seats(), Vec::new());
        let write = Write {
            applied: Some(Applied {
                table,
                observations,
            }),
            creates: Some(Box::new(creates)),
            ..Write::of(event, None, at, update)
        };
        Ok(Decision::Append(Box::new(write), ()))
    }

    async fn answer(
        &self,
        service: &Service,
        live: &mut Live,
        (): (),
    ) -> ApiResult<pb::CreateMatchResponse> {
        let record = &live.record;
        tracing::info!(match_id = %self.id, kind = record.kind, seats = record.seat_count, "match created");
        Ok(pb::CreateMatchResponse {
            r#match: Some(service.info(record, live.game()).await?),
            invites: Service::invites(self.keys, self.id, &self.creation),
            cancel_token: self.keys.cancel_token(self.id),
        })
    }

    async fn again(
        &self,
        service: &Service,
        _live: &Live,
        _seq: u64,
        (): (),
    ) -> ApiResult<pb::CreateMatchResponse> {
        service.created_again(self.id, &self.creation).await
    }
}
