//! Amori e Intrighi's proto mapping: options, actions, views and events, both ways where
//! needed. Ids travel as their stable strings; locations, attributes and dice as enums.

use missive_proto::v1 as pb;
use missive_rules::amori::{
    Action, ActiveDaughter, Amori, Attribute, Attributes, Bride, CardId, Config, DeckSize, Die,
    DieFace, Event, EventCardId, GentlemanId, Location, LocationDeckView, Phase, PlayerView,
    Scoring, SeatSetup, View,
};

use crate::games::ProtoGame;

fn seat(n: u32) -> Result<u8, String> {
    u8::try_from(n).map_err(|_| format!("seat {n} does not exist"))
}

fn parse<T: std::str::FromStr>(what: &str, id: &str) -> Result<T, String> {
    id.parse()
        .map_err(|_| format!("unknown {what} {}", crate::limits::shown(id)))
}

fn gentleman_card(id: &str) -> Result<CardId, String> {
    parse("gentleman card", id)
}

fn event_card(id: &str) -> Result<EventCardId, String> {
    parse("event card", id)
}

fn ids<T: ToString>(items: &[T]) -> Vec<String> {
    items.iter().map(T::to_string).collect()
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

pub(super) fn location_to_proto(location: Location) -> pb::AmoriLocation {
    match location {
        Location::Theater => pb::AmoriLocation::Theater,
        Location::Tavern => pb::AmoriLocation::Tavern,
        Location::Boulevard => pb::AmoriLocation::Boulevard,
        Location::Poorhouse => pb::AmoriLocation::Poorhouse,
        Location::Park => pb::AmoriLocation::Park,
        Location::Tailor => pb::AmoriLocation::Tailor,
    }
}

fn location(location: Option<Location>) -> i32 {
    location.map_or(pb::AmoriLocation::Unspecified, location_to_proto) as i32
}

/// `None` for UNSPECIFIED.
fn location_from_proto(value: i32) -> Result<Option<Location>, String> {
    let location =
        pb::AmoriLocation::try_from(value).map_err(|_| format!("unknown location {value}"))?;
    Ok(match location {
        pb::AmoriLocation::Unspecified => None,
        pb::AmoriLocation::Theater => Some(Location::Theater),
        pb::AmoriLocation::Tavern => Some(Location::Tavern),
        pb::AmoriLocation::Boulevard => Some(Location::Boulevard),
        pb::AmoriLocation::Poorhouse => Some(Location::Poorhouse),
        pb::AmoriLocation::Park => Some(Location::Park),
        pb::AmoriLocation::Tailor => Some(Location::Tailor),
    })
}

fn attribute_to_proto(attribute: Attribute) -> pb::AmoriAttribute {
    match attribute {
        Attribute::Reputation => pb::AmoriAttribute::Reputation,
        Attribute::Beauty => pb::AmoriAttribute::Beauty,
        Attribute::Education => pb::AmoriAttribute::Education,
    }
}

/// `None` for UNSPECIFIED.
fn attribute_from_proto(value: i32) -> Result<Option<Attribute>, String> {
    let attribute =
        pb::AmoriAttribute::try_from(value).map_err(|_| format!("unknown attribute {value}"))?;
    Ok(match attribute {
        pb::AmoriAttribute::Unspecified => None,
        pb::AmoriAttribute::Reputation => Some(Attribute::Reputation),
        pb::AmoriAttribute::Beauty => Some(Attribute::Beauty),
        pb::AmoriAttribute::Education => Some(Attribute::Education),
    })
}

pub(super) fn die_to_proto(die: Die) -> pb::AmoriDie {
    match die {
        Die::Casanova => pb::AmoriDie::Casanova,
        Die::Drink => pb::AmoriDie::Drink,
        Die::Intrigue => pb::AmoriDie::Intrigue,
    }
}

pub(super) fn face_to_proto(face: DieFace) -> pb::AmoriDieFace {
    match face {
        DieFace::Clover => pb::AmoriDieFace::Clover,
        DieFace::PinkHat => pb::AmoriDieFace::PinkHat,
        DieFace::RedHat => pb::AmoriDieFace::RedHat,
        DieFace::DarkRedHat => pb::AmoriDieFace::DarkRedHat,
        DieFace::Bottle => pb::AmoriDieFace::Bottle,
        DieFace::Exclamation => pb::AmoriDieFace::Exclamation,
    }
}

pub(super) fn attributes(a: &Attributes) -> pb::AmoriAttributes {
    pb::AmoriAttributes {
        reputation: a.reputation.into(),
        beauty: a.beauty.into(),
        education: a.education.into(),
    }
}

fn phase_to_proto(phase: &Phase) -> pb::AmoriPhase {
    use pb::amori_phase::Phase as P;
    let phase = match phase {
        Phase::Visit => P::Visit(pb::AmoriPhaseVisit {}),
        Phase::ActionOrIntrigue { location: l } => {
            P::ActionOrIntrigue(pb::AmoriPhaseActionOrIntrigue {
                location: location(Some(*l)),
            })
        }
        Phase::ChooseGentleman { seat, location: l } => {
            P::ChooseGentleman(pb::AmoriPhaseChooseGentleman {
                seat: (*seat).into(),
                location: location(Some(*l)),
            })
        }
        Phase::IntrigueSpoils { taker, victim } => {
            P::IntrigueSpoils(pb::AmoriPhaseIntrigueSpoils {
                taker: (*taker).into(),
                victim: (*victim).into(),
            })
        }
        Phase::SuitorLimit { seat, incoming } => P::SuitorLimit(pb::AmoriPhaseSuitorLimit {
            seat: (*seat).into(),
            incoming: incoming.to_string(),
        }),
        Phase::Reaction {
            attacker,
            target,
            card,
        } => P::Reaction(pb::AmoriPhaseReaction {
            attacker: (*attacker).into(),
            target: (*target).into(),
            card: card.to_string(),
        }),
        Phase::Events => P::Events(pb::AmoriPhaseEvents {}),
        Phase::Discard { seat } => P::Discard(pb::AmoriPhaseDiscard {
            seat: (*seat).into(),
        }),
        Phase::Over => P::Over(pb::AmoriPhaseOver {}),
    };
    pb::AmoriPhase { phase: Some(phase) }
}

fn daughter(d: &ActiveDaughter) -> pb::AmoriDaughter {
    pb::AmoriDaughter {
        daughter: d.daughter.to_string(),
        attributes: Some(attributes(&d.attributes)),
        suitors: ids(&d.suitors),
    }
}

fn bride(b: &Bride) -> pb::AmoriBride {
    pb::AmoriBride {
        daughter: b.daughter.to_string(),
        attributes: Some(attributes(&b.attributes)),
        husband: b.husband.to_string(),
        kept: b.kept.to_string(),
    }
}

fn player(p: &PlayerView) -> pb::AmoriPlayer {
    pb::AmoriPlayer {
        seat: p.seat.into(),
        active: p.active.as_ref().map(daughter),
        location: location(p.location),
        face_down: count(p.face_down),
        brides: p.brides.iter().map(bride).collect(),
        hand_size: count(p.hand_size),
        hand: p.hand.as_deref().map(ids).unwrap_or_default(),
        kept_for_points: ids(&p.kept_for_points),
    }
}

fn location_deck(d: &LocationDeckView) -> pb::AmoriLocationDeck {
    pb::AmoriLocationDeck {
        location: location(Some(d.location)),
        size: count(d.size),
        cards: d.cards.as_deref().map(ids).unwrap_or_default(),
    }
}

fn scoring(s: &Scoring) -> pb::AmoriScoring {
    pb::AmoriScoring {
        families: s.families.iter().map(attributes).collect(),
        medals: s
            .medals
            .iter()
            .map(|m| pb::AmoriMedal {
                attribute: attribute_to_proto(m.attribute) as i32,
                winner: m.winner.map(u32::from),
            })
            .collect(),
        marriage_points: s.marriage_points.iter().map(|&p| u32::from(p)).collect(),
        event_points: s.event_points.iter().map(|&p| u32::from(p)).collect(),
        totals: s.totals.clone(),
    }
}

fn seat_setup(s: &SeatSetup) -> pb::AmoriSeatSetup {
    pb::AmoriSeatSetup {
        seat: s.seat.into(),
        daughter: s.daughter.to_string(),
        attributes: Some(attributes(&s.attributes)),
        face_down: count(s.face_down),
        hand_size: count(s.hand_size),
    }
}

fn deck_size(d: &DeckSize) -> pb::AmoriDeckSize {
    pb::AmoriDeckSize {
        location: location(Some(d.location)),
        size: count(d.size),
    }
}

fn seat_card(seat: u8, card: impl ToString) -> pb::AmoriSeatCard {
    pb::AmoriSeatCard {
        seat: seat.into(),
        card: card.to_string(),
    }
}

fn seat_only(seat: u8) -> pb::AmoriSeatOnly {
    pb::AmoriSeatOnly { seat: seat.into() }
}

fn wrap(action: pb::amori_action::Action) -> pb::GameAction {
    pb::GameAction {
        game: Some(pb::game_action::Game::Amori(pb::AmoriAction {
            action: Some(action),
        })),
    }
}

impl ProtoGame for Amori {
    fn options_from_proto(options: &pb::GameOptions) -> Option<Result<Config, String>> {
        let pb::game_options::Game::Amori(o) = options.game.as_ref()? else {
            return None;
        };
        Some(
            o.starting_player
                .map(seat)
                .transpose()
                .map(|starting_player| Config { starting_player }),
        )
    }

    fn options_to_proto(config: &Config, _reveal: bool) -> pb::GameOptions {
        pb::GameOptions {
            game: Some(pb::game_options::Game::Amori(pb::AmoriOptions {
                starting_player: config.starting_player.map(u32::from),
            })),
        }
    }

    fn fixed_deck(_config: &Config) -> bool {
        // Every deck is shuffled from the seed; the options fix no card.
        false
    }

    fn action_from_proto(action: &pb::GameAction) -> Result<Action, String> {
        use pb::amori_action::Action as A;
        let Some(pb::game_action::Game::Amori(action)) = &action.game else {
            return Err("the action must be an amori action".into());
        };
        match &action.action {
            Some(A::Visit(v)) => Ok(Action::Visit {
                location: location_from_proto(v.location)?.ok_or("a visit needs a location")?,
            }),
            Some(A::LocationAction(a)) => Ok(Action::LocationAction {
                choice: attribute_from_proto(a.choice)?,
            }),
            Some(A::Intrigue(i)) => Ok(Action::Intrigue {
                target: seat(i.target)?,
            }),
            Some(A::Take(t)) => Ok(Action::Take {
                card: gentleman_card(&t.card)?,
            }),
            Some(A::GiveUp(g)) => Ok(Action::GiveUp {
                gentleman: parse::<GentlemanId>("gentleman", &g.gentleman)?,
            }),
            Some(A::PlayEvent(p)) => Ok(Action::PlayEvent {
                card: event_card(&p.card)?,
                target: p.target.map(seat).transpose()?,
                location: location_from_proto(p.location)?,
            }),
            Some(A::React(r)) => Ok(Action::React {
                card: event_card(&r.card)?,
            }),
            Some(A::Pass(_)) => Ok(Action::Pass),
            Some(A::EndTurn(_)) => Ok(Action::EndTurn),
            Some(A::Discard(d)) => Ok(Action::Discard {
                card: event_card(&d.card)?,
            }),
            None => Err(
                "the amori action must set one kind (visit, locationAction, intrigue, \
                         take, giveUp, playEvent, react, pass, endTurn, discard)"
                    .into(),
            ),
        }
    }

    fn action_to_proto(action: &Action) -> pb::GameAction {
        use pb::amori_action::Action as A;
        wrap(match action {
            Action::Visit { location: l } => A::Visit(pb::AmoriVisit {
                location: location(Some(*l)),
            }),
            Action::LocationAction { choice } => A::LocationAction(pb::AmoriLocationAction {
                choice: choice.map_or(pb::AmoriAttribute::Unspecified, attribute_to_proto) as i32,
            }),
            Action::Intrigue { target } => A::Intrigue(pb::AmoriIntrigue {
                target: (*target).into(),
            }),
            Action::Take { card } => A::Take(pb::AmoriTake {
                card: card.to_string(),
            }),
            Action::GiveUp { gentleman } => A::GiveUp(pb::AmoriGiveUp {
                gentleman: gentleman.to_string(),
            }),
            Action::PlayEvent {
                card,
                target,
                location: l,
            } => A::PlayEvent(pb::AmoriPlayEvent {
                card: card.to_string(),
                target: target.map(u32::from),
                location: location(*l),
            }),
            Action::React { card } => A::React(pb::AmoriReact {
                card: card.to_string(),
            }),
            Action::Pass => A::Pass(pb::AmoriPass {}),
            Action::EndTurn => A::EndTurn(pb::AmoriEndTurn {}),
            Action::Discard { card } => A::Discard(pb::AmoriDiscard {
                card: card.to_string(),
            }),
        })
    }

    fn view_to_proto(view: &View) -> pb::GameView {
        pb::GameView {
            game: Some(pb::game_view::Game::Amori(pb::AmoriView {
                seats: view.seats.into(),
                starting_player: view.starting_player.into(),
                current: view.current.into(),
                turn: view.turn,
                phase: Some(phase_to_proto(&view.phase)),
                players: view.players.iter().map(player).collect(),
                location_decks: view.location_decks.iter().map(location_deck).collect(),
                main_deck_size: count(view.main_deck_size),
                gentleman_discard: ids(&view.gentleman_discard),
                retired: ids(&view.retired),
                removed: ids(&view.removed),
                event_deck_size: count(view.event_deck_size),
                event_discard: ids(&view.event_discard),
                final_round: view.final_round,
                scoring: view.scoring.as_ref().map(scoring),
            })),
        }
    }

    fn event_to_proto(event: &Event) -> pb::GameEvent {
        use pb::amori_event::Event as E;
        let event = match event {
            Event::SetUp {
                starting_player,
                seats,
                location_decks,
                main_deck_size,
                event_deck_size,
                removed,
            } => E::SetUp(pb::AmoriSetUp {
                starting_player: (*starting_player).into(),
                seats: seats.iter().map(seat_setup).collect(),
                location_decks: location_decks.iter().map(deck_size).collect(),
                main_deck_size: count(*main_deck_size),
                event_deck_size: count(*event_deck_size),
                removed: ids(removed),
            }),
            Event::HandDealt { seat, cards } => E::HandDealt(pb::AmoriSeatCards {
                seat: (*seat).into(),
                cards: ids(cards),
            }),
            Event::TurnStarted { seat, turn } => E::TurnStarted(pb::AmoriTurnStarted {
                seat: (*seat).into(),
                turn: *turn,
            }),
            Event::Visited { seat, location: l } => E::Visited(pb::AmoriVisited {
                seat: (*seat).into(),
                location: location(Some(*l)),
            }),
            Event::AttributeChanged {
                seat,
                attribute,
                value,
            } => E::AttributeChanged(pb::AmoriAttributeChanged {
                seat: (*seat).into(),
                attribute: attribute_to_proto(*attribute) as i32,
                value: (*value).into(),
            }),
            Event::Rolled { seat, die, face } => E::Rolled(pb::AmoriRolled {
                seat: (*seat).into(),
                die: die_to_proto(*die) as i32,
                face: face_to_proto(*face) as i32,
            }),
            Event::DeckShown { location: l, cards } => E::DeckShown(pb::AmoriDeckShown {
                location: location(Some(*l)),
                cards: ids(cards),
            }),
            Event::TookFromLocation {
                seat,
                location: l,
                card,
            } => E::TookFromLocation(pb::AmoriTookFromLocation {
                seat: (*seat).into(),
                location: location(Some(*l)),
                card: card.to_string(),
            }),
            Event::LocationDeckRefilled { location: l } => {
                E::LocationDeckRefilled(pb::AmoriLocationDeckRefilled {
                    location: location(Some(*l)),
                })
            }
            Event::Intrigued { seat, target } => E::Intrigued(pb::AmoriIntrigued {
                seat: (*seat).into(),
                target: (*target).into(),
            }),
            Event::TookFromRival { seat, from, card } => E::TookFromRival(pb::AmoriTookFromRival {
                seat: (*seat).into(),
                from: (*from).into(),
                card: card.to_string(),
            }),
            Event::DrewFromMainDeck { seat, card } => E::DrewFromMainDeck(seat_card(*seat, card)),
            Event::GaveUp {
                seat,
                gentleman,
                cards,
            } => E::GaveUp(pb::AmoriGaveUp {
                seat: (*seat).into(),
                gentleman: gentleman.to_string(),
                cards: ids(cards),
            }),
            Event::SuitorJoined { seat, card } => E::SuitorJoined(seat_card(*seat, card)),
            Event::Married {
                seat,
                daughter,
                gentleman,
                kept,
            } => E::Married(pb::AmoriMarried {
                seat: (*seat).into(),
                daughter: daughter.to_string(),
                gentleman: gentleman.to_string(),
                kept: kept.to_string(),
            }),
            Event::GentlemenDiscarded { cards } => {
                E::GentlemenDiscarded(pb::AmoriCards { cards: ids(cards) })
            }
            Event::GentlemenRetired { cards } => {
                E::GentlemenRetired(pb::AmoriCards { cards: ids(cards) })
            }
            Event::DaughterRevealed {
                seat,
                daughter,
                attributes: a,
            } => E::DaughterRevealed(pb::AmoriDaughterRevealed {
                seat: (*seat).into(),
                daughter: daughter.to_string(),
                attributes: Some(attributes(a)),
            }),
            Event::MainDeckReshuffled { size } => {
                E::MainDeckReshuffled(pb::AmoriSize { size: count(*size) })
            }
            Event::EventPlayed {
                seat,
                card,
                target,
                location: l,
            } => E::EventPlayed(pb::AmoriEventPlayed {
                seat: (*seat).into(),
                card: card.to_string(),
                target: target.map(u32::from),
                location: location(*l),
            }),
            Event::Reacted { seat, card } => E::Reacted(seat_card(*seat, card)),
            Event::Passed { seat } => E::Passed(seat_only(*seat)),
            Event::EventDeckReshuffled { size } => {
                E::EventDeckReshuffled(pb::AmoriSize { size: count(*size) })
            }
            Event::EventDrawn { seat, card } => E::EventDrawn(seat_card(*seat, card)),
            Event::EventDrawnFaceDown { seat } => E::EventDrawnFaceDown(seat_only(*seat)),
            Event::EventDiscarded { seat, card } => E::EventDiscarded(seat_card(*seat, card)),
            Event::FinalRound { seat } => E::FinalRound(seat_only(*seat)),
            Event::GameOver { scoring: s } => E::GameOver(pb::AmoriGameOver {
                scoring: Some(scoring(s)),
            }),
        };
        pb::GameEvent {
            game: Some(pb::game_event::Game::Amori(pb::AmoriEvent {
                event: Some(event),
            })),
        }
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
                starting_player: Some(1),
            },
        ];
        crate::games::round_trip::check::<Amori>(&configs);
    }

    #[test]
    fn malformed_actions_are_refused_with_a_reason() {
        let amori = |action| pb::GameAction {
            game: Some(pb::game_action::Game::Amori(pb::AmoriAction { action })),
        };
        use pb::amori_action::Action as A;
        for (action, needle) in [
            (amori(None), "must set one kind"),
            (
                amori(Some(A::Visit(pb::AmoriVisit { location: 0 }))),
                "needs a location",
            ),
            (
                amori(Some(A::Visit(pb::AmoriVisit { location: 42 }))),
                "unknown location",
            ),
            (
                amori(Some(A::Take(pb::AmoriTake {
                    card: "theobald-7".into(),
                }))),
                "unknown gentleman card",
            ),
            (
                amori(Some(A::Discard(pb::AmoriDiscard {
                    card: "theobald-1".into(),
                }))),
                "unknown event card",
            ),
            (
                amori(Some(A::Intrigue(pb::AmoriIntrigue { target: 300 }))),
                "does not exist",
            ),
            (
                pb::GameAction {
                    game: Some(pb::game_action::Game::LoveLetter(
                        pb::LoveLetterAction::default(),
                    )),
                },
                "must be an amori action",
            ),
        ] {
            let err = Amori::action_from_proto(&action).expect_err("refused");
            assert!(err.contains(needle), "{err:?} should mention {needle:?}");
        }
    }
}
