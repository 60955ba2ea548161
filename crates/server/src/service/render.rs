//! The one place the service builds `pb::` messages from store records and game states:
//! match info, views, history entries and audit events.

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
        let over = is_over(record.status);
        let seed = match (over, seed) {
            (false, _) => None,
            (true, Some(seed)) => Some(hex::encode(seed)),
            (true, None) => Some(hex::encode(self.store.seed(record.id).await?)),
        };
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
            seed_commitment: hex::encode(record.seed_hash),
            seed,
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
            game: (record.status != MatchStatus::Open).then(|| state.view(viewer)),
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
        let info = self
            .info_with(&live.record, live.game.as_ref(), live.seed)
            .await?;
        Ok(Self::view(
            info,
            &live.record,
            live.state.as_ref(),
            &live.deadlines,
            viewer,
        ))
    }

    /// What `viewer` may learn from one event.
    pub(super) fn entries(
        game: &dyn GameKind,
        event: &StoredEvent,
        observations: &[Observation<pb::GameEvent>],
        viewer: Viewer,
    ) -> ApiResult<Vec<pb::HistoryEntry>> {
        use pb::history_entry::Entry;
        let entry = |entry| pb::HistoryEntry {
            seq: event.seq,
            at: Some(timestamp(event.at)),
            entry: Some(entry),
        };
        Ok(match event.kind.as_str() {
            kinds::CREATED => std::iter::once(entry(Entry::Created(Self::created(
                game,
                &event.payload,
                false,
            )?)))
            .chain(
                observations
                    .iter()
                    .filter(|o| o.audience.includes(viewer))
                    .map(|o| entry(Entry::Game(o.event.clone()))),
            )
            .collect(),
            // The join that starts a match dealt at its start carries the deal.
            kinds::JOINED => std::iter::once(entry(Entry::Joined(Self::joined(event)?)))
                .chain(
                    observations
                        .iter()
                        .filter(|o| o.audience.includes(viewer))
                        .map(|o| entry(Entry::Game(o.event.clone()))),
                )
                .collect(),
            kinds::LEFT => vec![entry(Entry::Left(pb::PlayerLeft {
                seat: payload_seat(event)?.into(),
            }))],
            kinds::TIMEOUT => {
                let seat = payload_seat(event)?;
                let action = &event.payload["action"];
                // The seat knows what was played for it; others only if the game shows it.
                let shown = viewer == Viewer::Seat(seat) || game.action_is_public(action);
                let timed_out = pb::TurnTimedOut {
                    seat: seat.into(),
                    action: shown.then(|| game.action_to_proto(action)).transpose()?,
                };
                std::iter::once(entry(Entry::TimedOut(timed_out)))
                    .chain(
                        observations
                            .iter()
                            .filter(|o| o.audience.includes(viewer))
                            .map(|o| entry(Entry::Game(o.event.clone()))),
                    )
                    .collect()
            }
            _ => observations
                .iter()
                .filter(|o| o.audience.includes(viewer))
                .map(|o| entry(Entry::Game(o.event.clone())))
                .collect(),
        })
    }

    pub(super) fn joined(event: &StoredEvent) -> ApiResult<pb::PlayerJoined> {
        Ok(pb::PlayerJoined {
            seat: payload_seat(event)?.into(),
            player: event.payload["player"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            nonce: event.payload["nonce"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        })
    }

    pub(super) fn created(
        game: &dyn GameKind,
        payload: &Value,
        reveal: bool,
    ) -> ApiResult<pb::MatchCreated> {
        Ok(pb::MatchCreated {
            options: Some(game.options_to_proto(&payload["config"], reveal)?),
            seat_count: payload["seat_count"].as_u64().unwrap_or_default() as u32,
            fixed_deck: payload["fixed_deck"].as_bool().unwrap_or_default(),
            turn_timeout_secs: payload["turn_timeout_secs"].as_u64().map(|s| s as u32),
            turn_reminder_secs: payload["turn_reminder_secs"].as_u64().map(|s| s as u32),
            bots: payload["bots"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| pb::BotSeat {
                    seat: b["seat"].as_u64().unwrap_or_default() as u32,
                    strategy: b["strategy"].as_str().unwrap_or_default().to_owned(),
                    nonce: b["nonce"].as_str().unwrap_or_default().to_owned(),
                })
                .collect(),
            deal_at_start: deal::deals_at_start(payload),
        })
    }

    pub(super) fn audit_event(
        game: &dyn GameKind,
        event: &StoredEvent,
    ) -> ApiResult<pb::AuditEvent> {
        use pb::audit_event::Body;
        let body = match event.kind.as_str() {
            kinds::CREATED => Some(Body::Created(Self::created(game, &event.payload, true)?)),
            kinds::JOINED => Some(Body::Joined(Self::joined(event)?)),
            kinds::LEFT => Some(Body::Left(pb::PlayerLeft {
                seat: payload_seat(event)?.into(),
            })),
            kinds::ACTION => Some(Body::Action(pb::ActionTaken {
                seat: payload_seat(event)?.into(),
                action: Some(game.action_to_proto(&event.payload["action"])?),
            })),
            kinds::TIMEOUT => Some(Body::TimedOut(pb::TurnTimedOut {
                seat: payload_seat(event)?.into(),
                action: Some(game.action_to_proto(&event.payload["action"])?),
            })),
            _ => None,
        };
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
