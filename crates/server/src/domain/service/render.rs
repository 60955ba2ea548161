//! The one place the service builds `pb::` messages from store records and game states:
//! match info, views, history entries, audit events and logs, a player's matches, invites and
//! webhook deliveries. Commands and reads only wrap what is built here in their answers.

use super::*;

impl Service {
    pub(super) async fn info(
        &self,
        record: &MatchRecord,
        game: &dyn GameKind,
    ) -> ApiResult<pb::MatchInfo> {
        self.info_with(record, game, None).await
    }

    /// [`Service::info`], with the seed if it is already known (it is only read, and shown,
    /// once the match is over).
    pub(super) async fn info_with(
        &self,
        record: &MatchRecord,
        game: &dyn GameKind,
        seed: Option<[u8; 32]>,
    ) -> ApiResult<pb::MatchInfo> {
        let seed = match seed {
            None if is_over(record.status) => Some(self.seed(record.id).await?),
            seed => seed,
        };
        Self::info_of(record, game, seed)
    }

    /// The match's info; `seed` is shown only once the match is over.
    pub(super) fn info_of(
        record: &MatchRecord,
        game: &dyn GameKind,
        seed: Option<[u8; 32]>,
    ) -> ApiResult<pb::MatchInfo> {
        let over = is_over(record.status);
        Ok(pb::MatchInfo {
            match_id: record.id.to_string(),
            kind: record.kind.clone(),
            status: status_to_proto(record.status) as i32,
            seat_count: record.seat_count.into(),
            seats: record
                .seats
                .iter()
                .map(|s| pb::SeatInfo {
                    seat: s.seat.into(),
                    taken: s.player.is_some(),
                    player: s.player.clone().unwrap_or_default(),
                    bot: s.bot.is_some(),
                })
                .collect(),
            options: Some(game.options_to_proto(&record.config, over)?),
            fixed_deck: game.fixed_deck(&record.config),
            turn_timeout_secs: record.turn_timeout_secs,
            turn_reminder_secs: record.turn_reminder_secs,
            invited_seats: record
                .seats
                .iter()
                .filter(|s| s.invited)
                .map(|s| s.seat.into())
                .collect(),
            seed_commitment: hex::encode(record.seed_hash),
            seed: seed.filter(|_| over).map(hex::encode),
            version: record.version,
            created_at: Some(timestamp(record.created_at)),
            updated_at: Some(timestamp(record.updated_at)),
            rules_version: record.rules_version,
        })
    }

    pub(super) fn view(
        info: pb::MatchInfo,
        record: &MatchRecord,
        state: &dyn MatchState,
        deadlines: &[(u8, DateTime<Utc>)],
        viewer: Viewer,
    ) -> pb::MatchView {
        let active = record.status == MatchStatus::Active;
        let seat = match viewer {
            Viewer::Seat(seat) => Some(seat),
            Viewer::Spectator => None,
        };
        pb::MatchView {
            fixed_deck: info.fixed_deck,
            version: record.version,
            seat: seat.map(u32::from),
            awaiting: if active {
                state.awaiting().iter().map(u32::from).collect()
            } else {
                Vec::new()
            },
            legal_actions: match seat {
                Some(seat) if active => state.legal_actions(seat),
                _ => Vec::new(),
            },
            // Nothing before the deal: an open match, or one closed before it started.
            game: (record.status != MatchStatus::Open)
                .then(|| state.view(viewer))
                .filter(|view| view.game.is_some()),
            outcome: state.outcome().map(|o| pb::Outcome {
                winners: o.winners.iter().map(u32::from).collect(),
                scores: o.scores,
            }),
            deadlines: deadlines
                .iter()
                .map(|&(seat, due_at)| pb::TurnDeadline {
                    seat: seat.into(),
                    due_at: Some(timestamp(due_at)),
                })
                .collect(),
            r#match: Some(info),
        }
    }

    pub(super) async fn live_view(&self, live: &Live, viewer: Viewer) -> ApiResult<pb::MatchView> {
        let info = match live.info()? {
            Some(info) => pb::MatchInfo::clone(&info),
            None => self.info_with(&live.record, live.game(), live.seed).await?,
        };
        Ok(Self::view(
            info,
            &live.record,
            live.state(),
            &live.deadlines,
            viewer,
        ))
    }

    /// What `viewer` may learn from one event.
    pub(super) fn entries(
        game: &dyn GameKind,
        step: &Replayed<'_>,
        viewer: Viewer,
    ) -> ApiResult<Vec<pb::HistoryEntry>> {
        let event = step.event;
        use pb::history_entry::Entry;
        let entry = |entry| pb::HistoryEntry {
            seq: event.seq,
            at: Some(timestamp(event.at)),
            entry: Some(entry),
        };
        // What the event itself says, then what the game told this viewer of it (the join that
        // starts a match dealt at its start carries the deal).
        let said = match step.typed.clone() {
            Event::Created(creation) => {
                Some(Entry::Created(Self::created(game, &creation, false)?))
            }
            Event::Joined {
                seat,
                player,
                nonce,
            } => Some(Entry::Joined(Self::joined(seat, player, nonce))),
            Event::Left { seat } => Some(Entry::Left(pb::PlayerLeft { seat: seat.into() })),
            Event::Timeout { seat, action } => {
                // The seat knows what was played for it; others only if the game shows it.
                let action = game.decode_action(&action)?;
                let shown = viewer == Viewer::Seat(seat) || game.action_is_public(&action);
                Some(Entry::TimedOut(pb::TurnTimedOut {
                    seat: seat.into(),
                    action: shown.then(|| game.action_to_proto(&action)).transpose()?,
                }))
            }
            Event::Closed { reason } => Some(Entry::Closed(Self::closed(reason))),
            Event::Action { .. } => None,
        };
        Ok(said
            .into_iter()
            .chain(
                step.observations
                    .iter()
                    .filter(|o| o.audience.includes(viewer))
                    .map(|o| Entry::Game(o.event.clone())),
            )
            .map(entry)
            .collect())
    }

    pub(super) fn joined(seat: u8, player: String, nonce: Option<String>) -> pb::PlayerJoined {
        pb::PlayerJoined {
            seat: seat.into(),
            player,
            nonce: nonce.unwrap_or_default(),
        }
    }

    pub(super) fn closed(reason: CloseReason) -> pb::MatchClosed {
        let reason = match reason {
            CloseReason::Cancelled => pb::CloseReason::Cancelled,
            CloseReason::Expired => pb::CloseReason::Expired,
        };
        pb::MatchClosed {
            reason: reason as i32,
        }
    }

    /// The creation record as clients see it: a fixed deck's order only once `reveal`.
    pub(crate) fn created(
        game: &dyn GameKind,
        creation: &Creation,
        reveal: bool,
    ) -> ApiResult<pb::MatchCreated> {
        Ok(pb::MatchCreated {
            options: Some(game.options_to_proto(&creation.config, reveal)?),
            seat_count: creation.seat_count.into(),
            fixed_deck: creation.fixed_deck,
            turn_timeout_secs: creation.turn_timeout_secs,
            turn_reminder_secs: creation.turn_reminder_secs,
            bots: creation
                .bots
                .iter()
                .map(|b| pb::BotSeat {
                    seat: b.seat.into(),
                    strategy: b.strategy.clone(),
                    nonce: b.nonce.clone().unwrap_or_default(),
                })
                .collect(),
            deal_at_start: creation.deal_at_start,
            invited_seats: creation.invited.iter().map(|&s| s.into()).collect(),
            rematch_of: creation
                .rematch_of
                .map(|id| id.to_string())
                .unwrap_or_default(),
        })
    }

    pub(super) fn audit_event(
        game: &dyn GameKind,
        event: &StoredEvent,
        typed: &Event,
    ) -> ApiResult<pb::AuditEvent> {
        use pb::audit_event::Body;
        let body = Some(match typed.clone() {
            Event::Created(creation) => Body::Created(Self::created(game, &creation, true)?),
            Event::Joined {
                seat,
                player,
                nonce,
            } => Body::Joined(Self::joined(seat, player, nonce)),
            Event::Left { seat } => Body::Left(pb::PlayerLeft { seat: seat.into() }),
            Event::Action { seat, action } => Body::Action(pb::ActionTaken {
                seat: seat.into(),
                action: Some(game.action_to_proto(&game.decode_action(&action)?)?),
            }),
            Event::Timeout { seat, action } => Body::TimedOut(pb::TurnTimedOut {
                seat: seat.into(),
                action: Some(game.action_to_proto(&game.decode_action(&action)?)?),
            }),
            Event::Closed { reason } => Body::Closed(Self::closed(reason)),
        });
        Ok(pb::AuditEvent {
            seq: event.seq,
            kind: event.kind.clone(),
            actor: event.actor.map(u32::from),
            request_id: event.request_id.clone(),
            at: Some(timestamp(event.at)),
            prev_hash: hex::encode(event.prev_hash),
            hash: hex::encode(event.hash),
            body,
        })
    }
}

pub(super) fn status_to_proto(status: MatchStatus) -> pb::MatchStatus {
    match status {
        MatchStatus::Open => pb::MatchStatus::Open,
        MatchStatus::Active => pb::MatchStatus::Active,
        MatchStatus::Finished => pb::MatchStatus::Finished,
        MatchStatus::Abandoned => pb::MatchStatus::Abandoned,
    }
}

impl Service {
    /// The invite codes of a creation's invited seats.
    pub(super) fn invites(keys: &Keys, id: MatchId, creation: &Creation) -> Vec<pb::Invite> {
        creation
            .invited
            .iter()
            .map(|&seat| pb::Invite {
                seat: seat.into(),
                code: keys.invite_code(id, seat),
            })
            .collect()
    }

    /// One of a player's matches, from their `seat`: whether it awaits them, and until when.
    pub(super) fn my_match_of(
        info: pb::MatchInfo,
        seat: u8,
        your_turn: bool,
        deadline: Option<DateTime<Utc>>,
        last_activity: DateTime<Utc>,
    ) -> pb::MyMatch {
        pb::MyMatch {
            r#match: Some(info),
            seat: seat.into(),
            your_turn,
            deadline: deadline.map(timestamp),
            last_activity: Some(timestamp(last_activity)),
        }
    }

    /// A webhook notification's delivery, as its seat's holder may see it.
    pub(super) fn delivery(d: missive_store::DeliveryRecord) -> pb::WebhookDelivery {
        pb::WebhookDelivery {
            version: d.key.seq,
            url: d.url,
            attempts: d.attempts,
            delivered_at: d.delivered_at.map(timestamp),
            next_attempt_at: d.next_attempt_at.map(timestamp),
            last_status: d.last_status.map(u32::from),
            last_error: d.last_error.unwrap_or_default(),
            r#type: d.key.kind.as_str().to_owned(),
        }
    }

    /// The audit log of an ended match (`record`, its `seed`): its events, and the head that
    /// states where the log ends and how, signed, so that a copy cut short, or one whose
    /// outcome was rewritten, no longer verifies against it.
    pub(super) fn audit_log(
        record: &MatchRecord,
        seed: [u8; 32],
        events: Vec<pb::AuditEvent>,
        outcome: Option<pb::Outcome>,
        signer: &crate::audit::Signer,
    ) -> pb::AuditLog {
        let seed_commitment = hex::encode(record.seed_hash);
        let mut head = pb::AuditHead {
            match_id: record.id.to_string(),
            version: events.last().map_or(0, |e| e.seq),
            hash: events.last().map(|e| e.hash.clone()).unwrap_or_default(),
            status: status_to_proto(record.status) as i32,
            outcome,
            seed_commitment: seed_commitment.clone(),
            rules_version: record.rules_version,
            key_id: String::new(),
            signature: String::new(),
        };
        signer.sign(&mut head);
        pb::AuditLog {
            seed: hex::encode(seed),
            seed_commitment,
            rules_version: record.rules_version,
            events,
            format: crate::audit::FORMAT,
            head: Some(head),
        }
    }
}
