//! Love Letter's proto mapping: options, actions, views and events, both ways where needed.

use missive_proto::v1 as pb;
use missive_rules::SeatSet;
use missive_rules::love_letter::{
    Action, CardId, Config, Edition, Event, LoveLetter, Role, RoundEnd, RoundResult, TokenReason,
    View,
};

use crate::games::ProtoGame;

fn card(id: &str) -> Result<CardId, String> {
    id.parse()
        .map_err(|_| format!("unknown card {}", crate::limits::shown(id)))
}

fn cards<C: FromIterator<CardId>>(ids: &[String]) -> Result<C, String> {
    ids.iter().map(|id| card(id)).collect()
}

fn ids(cards: &[CardId]) -> Vec<String> {
    cards.iter().map(|c| c.as_str().to_owned()).collect()
}

fn seat(n: u32) -> Result<u8, String> {
    u8::try_from(n).map_err(|_| format!("seat {n} does not exist"))
}

fn seats(set: SeatSet) -> Vec<u32> {
    set.iter().map(u32::from).collect()
}

pub(super) fn role_to_proto(role: Role) -> pb::LoveLetterRole {
    match role {
        Role::Spy => pb::LoveLetterRole::Spy,
        Role::Guard => pb::LoveLetterRole::Guard,
        Role::Priest => pb::LoveLetterRole::Priest,
        Role::Baron => pb::LoveLetterRole::Baron,
        Role::Handmaid => pb::LoveLetterRole::Handmaid,
        Role::Prince => pb::LoveLetterRole::Prince,
        Role::Chancellor => pb::LoveLetterRole::Chancellor,
        Role::King => pb::LoveLetterRole::King,
        Role::Countess => pb::LoveLetterRole::Countess,
        Role::Princess => pb::LoveLetterRole::Princess,
    }
}

fn role_from_proto(role: i32) -> Result<Option<Role>, String> {
    let role = pb::LoveLetterRole::try_from(role).map_err(|_| format!("unknown role {role}"))?;
    Ok(match role {
        pb::LoveLetterRole::Unspecified => None,
        pb::LoveLetterRole::Spy => Some(Role::Spy),
        pb::LoveLetterRole::Guard => Some(Role::Guard),
        pb::LoveLetterRole::Priest => Some(Role::Priest),
        pb::LoveLetterRole::Baron => Some(Role::Baron),
        pb::LoveLetterRole::Handmaid => Some(Role::Handmaid),
        pb::LoveLetterRole::Prince => Some(Role::Prince),
        pb::LoveLetterRole::Chancellor => Some(Role::Chancellor),
        pb::LoveLetterRole::King => Some(Role::King),
        pb::LoveLetterRole::Countess => Some(Role::Countess),
        pb::LoveLetterRole::Princess => Some(Role::Princess),
    })
}

fn guess(role: Option<Role>) -> i32 {
    role.map_or(pb::LoveLetterRole::Unspecified, role_to_proto) as i32
}

pub(super) fn edition_to_proto(edition: Edition) -> pb::LoveLetterEdition {
    match edition {
        Edition::V2019 => pb::LoveLetterEdition::LoveLetterEdition2019,
        Edition::Classic => pb::LoveLetterEdition::Classic,
    }
}

fn round_result(result: &RoundResult) -> pb::LoveLetterRoundResult {
    pb::LoveLetterRoundResult {
        round: result.round,
        reason: match result.reason {
            RoundEnd::LastStanding => pb::LoveLetterRoundEnd::LastStanding,
            RoundEnd::DeckEmpty => pb::LoveLetterRoundEnd::DeckEmpty,
        } as i32,
        hands: result
            .hands
            .iter()
            .enumerate()
            .filter_map(|(seat, card)| {
                card.map(|card| pb::LoveLetterSeatCard {
                    seat: seat as u32,
                    card: card.as_str().to_owned(),
                })
            })
            .collect(),
        set_aside: result.set_aside.map(|c| c.as_str().to_owned()),
        winners: seats(result.winners),
        spy_bonus: result.spy_bonus.map(u32::from),
        tokens: result.tokens.iter().map(|&t| u32::from(t)).collect(),
    }
}

fn seat_card(seat: u8, card: CardId) -> pb::LoveLetterSeatCard {
    pb::LoveLetterSeatCard {
        seat: seat.into(),
        card: card.as_str().to_owned(),
    }
}

impl ProtoGame for LoveLetter {
    fn options_from_proto(options: &pb::GameOptions) -> Option<Result<Config, String>> {
        // Irrefutable while Love Letter is the only game; other games add their own arms.
        #[allow(irrefutable_let_patterns)]
        let pb::game_options::Game::LoveLetter(o) = options.game.as_ref()? else {
            return None;
        };
        Some((|| {
            let edition = match pb::LoveLetterEdition::try_from(o.edition) {
                Ok(
                    pb::LoveLetterEdition::Unspecified
                    | pb::LoveLetterEdition::LoveLetterEdition2019,
                ) => Edition::V2019,
                Ok(pb::LoveLetterEdition::Classic) => Edition::Classic,
                Err(_) => return Err(format!("unknown edition {}", o.edition)),
            };
            let first_player = o.first_player.map(seat).transpose()?;
            let deck = if o.deck.is_empty() {
                None
            } else {
                Some(cards(&o.deck)?)
            };
            Ok(Config {
                edition,
                first_player,
                deck,
            })
        })())
    }

    fn options_to_proto(config: &Config, reveal: bool) -> pb::GameOptions {
        pb::GameOptions {
            game: Some(pb::game_options::Game::LoveLetter(pb::LoveLetterOptions {
                edition: edition_to_proto(config.edition) as i32,
                first_player: config.first_player.map(u32::from),
                deck: match (&config.deck, reveal) {
                    (Some(deck), true) => ids(deck),
                    _ => Vec::new(),
                },
            })),
        }
    }

    fn fixed_deck(config: &Config) -> bool {
        config.deck.is_some()
    }

    fn action_from_proto(action: &pb::GameAction) -> Result<Action, String> {
        let Some(pb::game_action::Game::LoveLetter(action)) = &action.game else {
            return Err("the action must be a loveLetter action".into());
        };
        match &action.action {
            Some(pb::love_letter_action::Action::Play(play)) => Ok(Action::Play {
                card: card(&play.card)?,
                target: play.target.map(seat).transpose()?,
                guess: role_from_proto(play.guess)?,
            }),
            Some(pb::love_letter_action::Action::ChancellorKeep(keep)) => {
                Ok(Action::ChancellorKeep {
                    keep: card(&keep.keep)?,
                    bottom: cards(&keep.bottom)?,
                })
            }
            None => Err("the action must be play or chancellorKeep".into()),
        }
    }

    fn action_to_proto(action: &Action) -> pb::GameAction {
        let action = match action {
            Action::Play {
                card,
                target,
                guess: g,
            } => pb::love_letter_action::Action::Play(pb::LoveLetterPlay {
                card: card.as_str().to_owned(),
                target: target.map(u32::from),
                guess: guess(*g),
            }),
            Action::ChancellorKeep { keep, bottom } => {
                pb::love_letter_action::Action::ChancellorKeep(pb::LoveLetterChancellorKeep {
                    keep: keep.as_str().to_owned(),
                    bottom: ids(bottom),
                })
            }
        };
        pb::GameAction {
            game: Some(pb::game_action::Game::LoveLetter(pb::LoveLetterAction {
                action: Some(action),
            })),
        }
    }

    fn view_to_proto(view: &View) -> pb::GameView {
        pb::GameView {
            game: Some(pb::game_view::Game::LoveLetter(pb::LoveLetterView {
                edition: edition_to_proto(view.edition) as i32,
                hand: ids(&view.hand),
                players: view
                    .players
                    .iter()
                    .map(|p| pb::LoveLetterPlayer {
                        seat: p.seat.into(),
                        played: ids(&p.played),
                        out: p.out,
                        protected: p.protected,
                        tokens: p.tokens.into(),
                        hand_count: p.hand_count.into(),
                    })
                    .collect(),
                deck_count: view.deck_count.into(),
                face_up: ids(&view.face_up),
                round: view.round,
                turn: view.turn.map(u32::from),
                chancellor_choice: view
                    .chancellor_choice
                    .as_deref()
                    .map(ids)
                    .unwrap_or_default(),
                tokens_to_win: view.tokens_to_win.into(),
                last_round: view.last_round.as_ref().map(round_result),
                winners: view.winners.map(seats).unwrap_or_default(),
            })),
        }
    }

    fn event_to_proto(event: &Event) -> pb::GameEvent {
        use pb::love_letter_event::Event as E;
        let event = match event {
            Event::RoundStarted {
                round,
                first_player,
                face_up,
            } => E::RoundStarted(pb::LoveLetterRoundStarted {
                round: *round,
                first_player: (*first_player).into(),
                face_up: ids(face_up),
            }),
            Event::Dealt { seat, card } => E::Dealt(seat_card(*seat, *card)),
            Event::TurnStarted { seat } => E::TurnStarted(pb::LoveLetterSeatOnly {
                seat: (*seat).into(),
            }),
            Event::Drew { seat, card } => E::Drew(seat_card(*seat, *card)),
            Event::Played {
                seat,
                card,
                target,
                guess: g,
            } => E::Played(pb::LoveLetterPlayed {
                seat: (*seat).into(),
                card: card.as_str().to_owned(),
                target: target.map(u32::from),
                guess: guess(*g),
            }),
            Event::NoEffect { seat, card } => E::NoEffect(seat_card(*seat, *card)),
            Event::GuardGuess {
                seat,
                target,
                guess: g,
                hit,
            } => E::GuardGuess(pb::LoveLetterGuardGuess {
                seat: (*seat).into(),
                target: (*target).into(),
                guess: guess(Some(*g)),
                hit: *hit,
            }),
            Event::PriestSaw { seat, target, card } => E::PriestSaw(pb::LoveLetterPriestSaw {
                seat: (*seat).into(),
                target: (*target).into(),
                card: card.as_str().to_owned(),
            }),
            Event::BaronCompared {
                seat,
                target,
                seat_card,
                target_card,
                loser,
            } => E::BaronCompared(pb::LoveLetterBaronCompared {
                seat: (*seat).into(),
                target: (*target).into(),
                seat_card: seat_card.as_str().to_owned(),
                target_card: target_card.as_str().to_owned(),
                loser: loser.map(u32::from),
            }),
            Event::KingTraded {
                seat,
                target,
                seat_gave,
                target_gave,
            } => E::KingTraded(pb::LoveLetterKingTraded {
                seat: (*seat).into(),
                target: (*target).into(),
                seat_gave: seat_gave.as_str().to_owned(),
                target_gave: target_gave.as_str().to_owned(),
            }),
            Event::PrinceDiscarded { seat, target, card } => {
                E::PrinceDiscarded(pb::LoveLetterPrinceDiscarded {
                    seat: (*seat).into(),
                    target: (*target).into(),
                    card: card.as_str().to_owned(),
                })
            }
            Event::PrinceDrew {
                target,
                card,
                from_set_aside,
            } => E::PrinceDrew(pb::LoveLetterPrinceDrew {
                target: (*target).into(),
                card: card.as_str().to_owned(),
                from_set_aside: *from_set_aside,
            }),
            Event::ChancellorDrew { seat, cards } => {
                E::ChancellorDrew(pb::LoveLetterChancellorDrew {
                    seat: (*seat).into(),
                    cards: ids(cards),
                })
            }
            Event::ChancellorReturned { seat, count } => {
                E::ChancellorReturned(pb::LoveLetterChancellorReturned {
                    seat: (*seat).into(),
                    count: (*count).into(),
                })
            }
            Event::ChancellorKept { seat, kept, bottom } => {
                E::ChancellorKept(pb::LoveLetterChancellorKept {
                    seat: (*seat).into(),
                    kept: kept.as_str().to_owned(),
                    bottom: ids(bottom),
                })
            }
            Event::PlayerOut { seat, discarded } => E::PlayerOut(pb::LoveLetterPlayerOut {
                seat: (*seat).into(),
                discarded: ids(discarded),
            }),
            Event::RoundEnded(result) => E::RoundEnded(round_result(result)),
            Event::TokenGained {
                seat,
                reason,
                total,
            } => E::TokenGained(pb::LoveLetterTokenGained {
                seat: (*seat).into(),
                reason: match reason {
                    TokenReason::RoundWin => pb::LoveLetterTokenReason::RoundWin,
                    TokenReason::SpyBonus => pb::LoveLetterTokenReason::SpyBonus,
                } as i32,
                total: (*total).into(),
            }),
            Event::MatchEnded { winners, tokens } => E::MatchEnded(pb::LoveLetterMatchEnded {
                winners: seats(*winners),
                tokens: tokens.iter().map(|&t| u32::from(t)).collect(),
            }),
        };
        pb::GameEvent {
            game: Some(pb::game_event::Game::LoveLetter(pb::LoveLetterEvent {
                event: Some(event),
            })),
        }
    }

    fn action_is_public(action: &Action) -> bool {
        // A card played is shown to everyone; a Chancellor's keep and return is secret.
        matches!(action, Action::Play { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options, actions, views and events of many random games survive their proto forms.
    #[test]
    fn every_message_survives_its_proto_round_trip() {
        let configs = [
            Config::default(),
            Config {
                edition: Edition::Classic,
                ..Config::default()
            },
            Config {
                first_player: Some(1),
                ..Config::default()
            },
        ];
        crate::games::round_trip::check::<LoveLetter>(&configs);
    }
}
