//! Lopti's proto mapping: options, actions, views and events, both ways where needed.
//!
//! Conversions from proto check the shape only (known cards and enums, set oneofs, numbers in
//! range of their rules types); whether an action is legal is the rules' call.

use missive_proto::v1 as pb;
use missive_rules::SeatSet;
use missive_rules::lopti::{
    Action, Ballot, BaseRules, BurnCause, Card, CarriedRule, Change, Config, Effect, Event, Lopti,
    PhaseView, Proposal, Rank, Rule, RuleBody, RuleSpec, RuleStatus, SeatView, Source, Special,
    Throw, Timing, Trigger, View, VoteResult,
};

use crate::games::ProtoGame;

use pb::lopti_action::Action as A;
use pb::lopti_change::Change as C;
use pb::lopti_effect::Effect as Ef;
use pb::lopti_event::Event as E;
use pb::lopti_phase::Phase as P;
use pb::lopti_rule_body::Body as B;
use pb::lopti_trigger::Trigger as T;

const EMPTY: pb::LoptiEmpty = pb::LoptiEmpty {};

fn card(id: &str) -> Result<Card, String> {
    id.parse()
        .map_err(|_| format!("unknown card {}", crate::limits::shown(id)))
}

fn cards<C: FromIterator<Card>>(ids: &[String]) -> Result<C, String> {
    ids.iter().map(|id| card(id)).collect()
}

pub(super) fn ids(cards: &[Card]) -> Vec<String> {
    cards.iter().map(Card::to_string).collect()
}

fn seat(n: u32) -> Result<u8, String> {
    u8::try_from(n).map_err(|_| format!("seat {n} does not exist"))
}

fn seats(set: SeatSet) -> Vec<u32> {
    set.iter().map(u32::from).collect()
}

fn small(n: u32, what: &str) -> Result<u8, String> {
    u8::try_from(n).map_err(|_| format!("{what} {n} is out of range"))
}

fn rule_id(n: u32) -> Result<u16, String> {
    u16::try_from(n).map_err(|_| format!("there is no rule {n}"))
}

pub(super) fn rank_to_proto(rank: Option<Rank>) -> i32 {
    // The enum's numbers are the ranks' face values; 0 is "none".
    rank.map_or(pb::LoptiRank::Unspecified as i32, |r| r as i32)
}

/// A rank that must be set.
fn rank_from_proto(rank: i32) -> Result<Rank, String> {
    Rank::ALL
        .into_iter()
        .find(|r| *r as i32 == rank)
        .ok_or_else(|| {
            format!("a rank must be given (LOPTI_RANK_TWO to LOPTI_RANK_ACE), not {rank}")
        })
}

fn special_from_proto(special: i32) -> Result<Special, String> {
    match pb::LoptiSpecial::try_from(special) {
        Ok(pb::LoptiSpecial::Reset) => Ok(Special::Reset),
        Ok(pb::LoptiSpecial::Pass) => Ok(Special::Pass),
        Ok(pb::LoptiSpecial::Low) => Ok(Special::Low),
        Ok(pb::LoptiSpecial::Burn) => Ok(Special::Burn),
        Ok(pb::LoptiSpecial::Unspecified) | Err(_) => Err(format!(
            "special must be reset, pass, low or burn, not {special}"
        )),
    }
}

pub(super) fn special_to_proto(special: Special) -> pb::LoptiSpecial {
    match special {
        Special::Reset => pb::LoptiSpecial::Reset,
        Special::Pass => pb::LoptiSpecial::Pass,
        Special::Low => pb::LoptiSpecial::Low,
        Special::Burn => pb::LoptiSpecial::Burn,
    }
}

fn throw_to_proto(throw: Throw) -> pb::LoptiThrow {
    match throw {
        Throw::Rock => pb::LoptiThrow::Rock,
        Throw::Paper => pb::LoptiThrow::Paper,
        Throw::Scissors => pb::LoptiThrow::Scissors,
    }
}

fn throw_from_proto(throw: i32) -> Result<Throw, String> {
    match pb::LoptiThrow::try_from(throw) {
        Ok(pb::LoptiThrow::Rock) => Ok(Throw::Rock),
        Ok(pb::LoptiThrow::Paper) => Ok(Throw::Paper),
        Ok(pb::LoptiThrow::Scissors) => Ok(Throw::Scissors),
        Ok(pb::LoptiThrow::Unspecified) | Err(_) => {
            Err(format!("a throw is rock, paper or scissors, not {throw}"))
        }
    }
}

fn opt_throw(throw: Option<Throw>) -> i32 {
    throw.map_or(pb::LoptiThrow::Unspecified, throw_to_proto) as i32
}

fn ballot_to_proto(ballot: Ballot) -> pb::LoptiBallot {
    match ballot {
        Ballot::Yes => pb::LoptiBallot::Yes,
        Ballot::No => pb::LoptiBallot::No,
        Ballot::Abstain => pb::LoptiBallot::Abstain,
    }
}

fn ballot_from_proto(ballot: i32) -> Result<Ballot, String> {
    match pb::LoptiBallot::try_from(ballot) {
        Ok(pb::LoptiBallot::Yes) => Ok(Ballot::Yes),
        Ok(pb::LoptiBallot::No) => Ok(Ballot::No),
        Ok(pb::LoptiBallot::Abstain) => Ok(Ballot::Abstain),
        Ok(pb::LoptiBallot::Unspecified) | Err(_) => {
            Err(format!("a ballot is yes, no or abstain, not {ballot}"))
        }
    }
}

fn timing_to_proto(timing: Timing) -> pb::LoptiTiming {
    match timing {
        Timing::Now => pb::LoptiTiming::Now,
        Timing::NextHand => pb::LoptiTiming::NextHand,
    }
}

fn timing_from_proto(timing: i32) -> Result<Timing, String> {
    match pb::LoptiTiming::try_from(timing) {
        Ok(pb::LoptiTiming::Now) => Ok(Timing::Now),
        Ok(pb::LoptiTiming::NextHand) => Ok(Timing::NextHand),
        Ok(pb::LoptiTiming::Unspecified) | Err(_) => Err(format!(
            "a proposal's timing is LOPTI_TIMING_NOW or LOPTI_TIMING_NEXT_HAND, not {timing}"
        )),
    }
}

fn trigger_to_proto(trigger: Trigger) -> pb::LoptiTrigger {
    let trigger = match trigger {
        Trigger::RankPlayed { rank } => T::RankPlayed(pb::LoptiRankPlayed {
            rank: rank_to_proto(Some(rank)),
        }),
        Trigger::CardsPlayed { at_least } => T::CardsPlayed(pb::LoptiCardsPlayed {
            at_least: at_least.into(),
        }),
        Trigger::PileBurned => T::PileBurned(EMPTY),
        Trigger::PilePickedUp => T::PilePickedUp(EMPTY),
        Trigger::FaceUpTaken => T::FaceUpTaken(EMPTY),
    };
    pb::LoptiTrigger {
        trigger: Some(trigger),
    }
}

fn trigger_from_proto(trigger: Option<&pb::LoptiTrigger>) -> Result<Trigger, String> {
    match trigger.and_then(|t| t.trigger.as_ref()) {
        Some(T::RankPlayed(t)) => Ok(Trigger::RankPlayed {
            rank: rank_from_proto(t.rank)?,
        }),
        Some(T::CardsPlayed(t)) => Ok(Trigger::CardsPlayed {
            at_least: small(t.at_least, "cardsPlayed.atLeast")?,
        }),
        Some(T::PileBurned(_)) => Ok(Trigger::PileBurned),
        Some(T::PilePickedUp(_)) => Ok(Trigger::PilePickedUp),
        Some(T::FaceUpTaken(_)) => Ok(Trigger::FaceUpTaken),
        None => Err("a rule needs a trigger".into()),
    }
}

fn effect_to_proto(effect: Effect) -> pb::LoptiEffect {
    let effect = match effect {
        Effect::NextPlayerSkips => Ef::NextPlayerSkips(EMPTY),
        Effect::ReverseDirection => Ef::ReverseDirection(EMPTY),
        Effect::PlayerDraws { count } => Ef::PlayerDraws(pb::LoptiPlayerDraws {
            count: count.into(),
        }),
        Effect::OthersDrawOne => Ef::OthersDrawOne(EMPTY),
        Effect::BurnPile => Ef::BurnPile(EMPTY),
        Effect::BonusPlay => Ef::BonusPlay(EMPTY),
    };
    pb::LoptiEffect {
        effect: Some(effect),
    }
}

fn effect_from_proto(effect: Option<&pb::LoptiEffect>) -> Result<Effect, String> {
    match effect.and_then(|e| e.effect.as_ref()) {
        Some(Ef::NextPlayerSkips(_)) => Ok(Effect::NextPlayerSkips),
        Some(Ef::ReverseDirection(_)) => Ok(Effect::ReverseDirection),
        Some(Ef::PlayerDraws(e)) => Ok(Effect::PlayerDraws {
            count: small(e.count, "playerDraws.count")?,
        }),
        Some(Ef::OthersDrawOne(_)) => Ok(Effect::OthersDrawOne),
        Some(Ef::BurnPile(_)) => Ok(Effect::BurnPile),
        Some(Ef::BonusPlay(_)) => Ok(Effect::BonusPlay),
        None => Err("a rule needs an effect".into()),
    }
}

fn spec_to_proto(spec: RuleSpec) -> pb::LoptiRuleSpec {
    pb::LoptiRuleSpec {
        trigger: Some(trigger_to_proto(spec.trigger)),
        effect: Some(effect_to_proto(spec.effect)),
    }
}

fn spec_from_proto(spec: &pb::LoptiRuleSpec) -> Result<RuleSpec, String> {
    Ok(RuleSpec {
        trigger: trigger_from_proto(spec.trigger.as_ref())?,
        effect: effect_from_proto(spec.effect.as_ref())?,
    })
}

fn body_to_proto(body: &RuleBody) -> pb::LoptiRuleBody {
    pb::LoptiRuleBody {
        body: Some(match body {
            RuleBody::Enforced { spec } => B::Enforced(spec_to_proto(*spec)),
            RuleBody::Table { text } => B::Table(text.to_string()),
        }),
    }
}

fn body_from_proto(body: Option<&pb::LoptiRuleBody>) -> Result<RuleBody, String> {
    match body.and_then(|b| b.body.as_ref()) {
        Some(B::Enforced(spec)) => Ok(RuleBody::Enforced {
            spec: spec_from_proto(spec)?,
        }),
        Some(B::Table(text)) => Ok(RuleBody::Table {
            text: text.as_str().into(),
        }),
        None => Err("a rule body is enforced or table".into()),
    }
}

fn rule_to_proto(rule: &Rule) -> pb::LoptiRule {
    pb::LoptiRule {
        id: rule.id.into(),
        creator: rule.creator.into(),
        won_in_hand: rule.won_in_hand.map(u32::from),
        body: Some(body_to_proto(&rule.body)),
        status: match rule.status {
            RuleStatus::Active => pb::LoptiRuleStatus::Active,
            RuleStatus::Removed => pb::LoptiRuleStatus::Removed,
            RuleStatus::Cancelled => pb::LoptiRuleStatus::Cancelled,
        } as i32,
    }
}

fn change_to_proto(change: &Change) -> pb::LoptiChange {
    let change = match change {
        Change::RemoveRule { rule } => C::RemoveRule(pb::LoptiRuleRef {
            rule: (*rule).into(),
        }),
        Change::ModifyRule { rule, to } => C::ModifyRule(pb::LoptiModifyRule {
            rule: (*rule).into(),
            to: Some(body_to_proto(to)),
        }),
        Change::RestoreRule { rule } => C::RestoreRule(pb::LoptiRuleRef {
            rule: (*rule).into(),
        }),
        Change::SetHandSize { size } => C::SetHandSize(pb::LoptiSetHandSize {
            size: (*size).into(),
        }),
        Change::SetSpecial { special, rank } => C::SetSpecial(pb::LoptiSetSpecial {
            special: special_to_proto(*special) as i32,
            rank: rank_to_proto(*rank),
            off: rank.is_none(),
        }),
    };
    pb::LoptiChange {
        change: Some(change),
    }
}

fn change_from_proto(change: Option<&pb::LoptiChange>) -> Result<Change, String> {
    match change.and_then(|c| c.change.as_ref()) {
        Some(C::RemoveRule(r)) => Ok(Change::RemoveRule {
            rule: rule_id(r.rule)?,
        }),
        Some(C::ModifyRule(m)) => Ok(Change::ModifyRule {
            rule: rule_id(m.rule)?,
            to: body_from_proto(m.to.as_ref())?,
        }),
        Some(C::RestoreRule(r)) => Ok(Change::RestoreRule {
            rule: rule_id(r.rule)?,
        }),
        Some(C::SetHandSize(s)) => Ok(Change::SetHandSize {
            size: small(s.size, "setHandSize.size")?,
        }),
        Some(C::SetSpecial(s)) => {
            let special = special_from_proto(s.special)?;
            let rank = match (s.rank == pb::LoptiRank::Unspecified as i32, s.off) {
                (true, true) => None,
                (false, false) => Some(rank_from_proto(s.rank)?),
                _ => {
                    return Err("setSpecial takes either a rank or off, not both or neither".into());
                }
            };
            Ok(Change::SetSpecial { special, rank })
        }
        None => {
            Err("a change is removeRule, modifyRule, restoreRule, setHandSize or setSpecial".into())
        }
    }
}

fn proposal_to_proto(proposal: &Proposal) -> pb::LoptiProposal {
    pb::LoptiProposal {
        by: proposal.by.into(),
        change: Some(change_to_proto(&proposal.change)),
        timing: timing_to_proto(proposal.timing) as i32,
    }
}

pub(super) fn base_to_proto(base: &BaseRules) -> pb::LoptiBaseRules {
    pb::LoptiBaseRules {
        hand_size: base.hand_size.into(),
        reset: rank_to_proto(base.reset),
        pass: rank_to_proto(base.pass),
        low: rank_to_proto(base.low),
        burn: rank_to_proto(base.burn),
    }
}

fn throws(challenger: Throw, defender: Throw) -> pb::LoptiThrows {
    pb::LoptiThrows {
        challenger: throw_to_proto(challenger) as i32,
        defender: throw_to_proto(defender) as i32,
    }
}

fn phase_to_proto(phase: &PhaseView) -> pb::LoptiPhase {
    let phase = match phase {
        PhaseView::RuleCreation { winner } => P::RuleCreation(pb::LoptiRuleCreationPhase {
            winner: (*winner).into(),
        }),
        PhaseView::Proposal { declined } => P::Proposal(pb::LoptiProposalPhase {
            declined: seats(*declined),
        }),
        PhaseView::Voting {
            proposal,
            voted,
            your_ballot,
        } => P::Voting(pb::LoptiVotingPhase {
            proposal: Some(proposal_to_proto(proposal)),
            voted: seats(*voted),
            your_ballot: your_ballot.map_or(pb::LoptiBallot::Unspecified, ballot_to_proto) as i32,
        }),
        PhaseView::Roshambo {
            proposal,
            sides,
            score,
            decisive,
            committed,
            your_throw,
            last_reveal,
        } => P::Roshambo(pb::LoptiRoshamboPhase {
            proposal: Some(proposal_to_proto(proposal)),
            challenger: sides[0].into(),
            defender: sides[1].into(),
            challenger_wins: score[0].into(),
            defender_wins: score[1].into(),
            decisive: (*decisive).into(),
            committed: seats(*committed),
            your_throw: opt_throw(*your_throw),
            last_reveal: last_reveal.map(|[c, d]| throws(c, d)),
        }),
        PhaseView::Swap { done } => P::Swap(pb::LoptiSwapPhase { done: seats(*done) }),
        PhaseView::Play {
            seat,
            plays_left,
            played,
        } => P::Play(pb::LoptiPlayPhase {
            seat: (*seat).into(),
            plays_left: (*plays_left).into(),
            played: *played,
        }),
        PhaseView::Over => P::Over(EMPTY),
    };
    pb::LoptiPhase { phase: Some(phase) }
}

fn seat_to_proto(seat: usize, view: &SeatView) -> pb::LoptiSeat {
    pb::LoptiSeat {
        seat: seat as u32,
        face_up: ids(&view.face_up),
        face_down: view.face_down.into(),
        in_hand: view.in_hand.into(),
        hands_won: view.hands_won.into(),
    }
}

fn seat_only(seat: u8) -> pb::LoptiSeatOnly {
    pb::LoptiSeatOnly { seat: seat.into() }
}

fn seat_cards(seat: u8, cards: &[Card]) -> pb::LoptiSeatCards {
    pb::LoptiSeatCards {
        seat: seat.into(),
        cards: ids(cards),
    }
}

fn lopti_action(action: A) -> pb::GameAction {
    pb::GameAction {
        game: Some(pb::game_action::Game::Lopti(pb::LoptiAction {
            action: Some(action),
        })),
    }
}

impl ProtoGame for Lopti {
    fn options_from_proto(options: &pb::GameOptions) -> Option<Result<Config, String>> {
        let pb::game_options::Game::Lopti(o) = options.game.as_ref()? else {
            return None;
        };
        Some((|| {
            let hands = match o.hands {
                0 => Config::default().hands,
                n => small(n, "hands")?,
            };
            let fixed_deck = if o.deck.is_empty() {
                None
            } else {
                Some(cards(&o.deck)?)
            };
            let carried_rules = o
                .carried_rules
                .iter()
                .map(|r| {
                    Ok(CarriedRule {
                        creator: seat(r.creator)?,
                        body: body_from_proto(r.rule.as_ref())?,
                    })
                })
                .collect::<Result<_, String>>()?;
            Ok(Config {
                hands,
                fixed_deck,
                carried_rules,
            })
        })())
    }

    fn options_to_proto(config: &Config, reveal: bool) -> pb::GameOptions {
        pb::GameOptions {
            game: Some(pb::game_options::Game::Lopti(pb::LoptiOptions {
                hands: config.hands.into(),
                deck: match (&config.fixed_deck, reveal) {
                    (Some(deck), true) => ids(deck),
                    _ => Vec::new(),
                },
                carried_rules: config
                    .carried_rules
                    .iter()
                    .map(|r| pb::LoptiCarriedRule {
                        creator: r.creator.into(),
                        rule: Some(body_to_proto(&r.body)),
                    })
                    .collect(),
            })),
        }
    }

    fn fixed_deck(config: &Config) -> bool {
        config.fixed_deck.is_some()
    }

    fn action_from_proto(action: &pb::GameAction) -> Result<Action, String> {
        let Some(pb::game_action::Game::Lopti(action)) = &action.game else {
            return Err("the action must be a lopti action".into());
        };
        match &action.action {
            Some(A::Swap(s)) => Ok(Action::Swap {
                hand: card(&s.hand)?,
                face_up: card(&s.face_up)?,
            }),
            Some(A::KeepCards(_)) => Ok(Action::KeepCards),
            Some(A::CreateRule(c)) => Ok(Action::CreateRule {
                rule: c.rule.as_ref().map(spec_from_proto).transpose()?,
                table_rule: c.table_rule.as_deref().map(Into::into),
            }),
            Some(A::SkipRule(_)) => Ok(Action::SkipRule),
            Some(A::Propose(p)) => Ok(Action::Propose {
                change: change_from_proto(p.change.as_ref())?,
                timing: timing_from_proto(p.timing)?,
            }),
            Some(A::DeclineProposal(_)) => Ok(Action::DeclineProposal),
            Some(A::Vote(v)) => Ok(Action::Vote {
                ballot: ballot_from_proto(v.ballot)?,
            }),
            Some(A::RoshamboThrow(t)) => Ok(Action::Throw {
                throw: throw_from_proto(t.choice)?,
            }),
            Some(A::Play(p)) => Ok(Action::Play {
                cards: cards(&p.cards)?,
            }),
            Some(A::PlayFaceDown(p)) => Ok(Action::PlayFaceDown {
                index: small(p.index, "playFaceDown.index")?,
            }),
            Some(A::PickUp(_)) => Ok(Action::PickUp),
            Some(A::CancelRule(r)) => Ok(Action::CancelRule {
                rule: rule_id(r.rule)?,
            }),
            None => Err("the lopti action must set one action".into()),
        }
    }

    fn action_to_proto(action: &Action) -> pb::GameAction {
        lopti_action(match action {
            Action::Swap { hand, face_up } => A::Swap(pb::LoptiSwap {
                hand: hand.to_string(),
                face_up: face_up.to_string(),
            }),
            Action::KeepCards => A::KeepCards(EMPTY),
            Action::CreateRule { rule, table_rule } => A::CreateRule(pb::LoptiCreateRule {
                rule: rule.map(spec_to_proto),
                table_rule: table_rule.as_deref().map(str::to_owned),
            }),
            Action::SkipRule => A::SkipRule(EMPTY),
            Action::Propose { change, timing } => A::Propose(pb::LoptiPropose {
                change: Some(change_to_proto(change)),
                timing: timing_to_proto(*timing) as i32,
            }),
            Action::DeclineProposal => A::DeclineProposal(EMPTY),
            Action::Vote { ballot } => A::Vote(pb::LoptiVote {
                ballot: ballot_to_proto(*ballot) as i32,
            }),
            Action::Throw { throw } => A::RoshamboThrow(pb::LoptiRoshamboThrow {
                choice: throw_to_proto(*throw) as i32,
            }),
            Action::Play { cards } => A::Play(pb::LoptiPlay { cards: ids(cards) }),
            Action::PlayFaceDown { index } => A::PlayFaceDown(pb::LoptiPlayFaceDown {
                index: (*index).into(),
            }),
            Action::PickUp => A::PickUp(EMPTY),
            Action::CancelRule { rule } => A::CancelRule(pb::LoptiRuleRef {
                rule: (*rule).into(),
            }),
        })
    }

    fn view_to_proto(view: &View) -> pb::GameView {
        pb::GameView {
            game: Some(pb::game_view::Game::Lopti(pb::LoptiView {
                hand: view.hand.into(),
                hands: view.hands.into(),
                dealer: view.dealer.into(),
                phase: Some(phase_to_proto(&view.phase)),
                your_hand: view.your_hand.as_deref().map(ids).unwrap_or_default(),
                seats: view
                    .seats
                    .iter()
                    .enumerate()
                    .map(|(seat, v)| seat_to_proto(seat, v))
                    .collect(),
                pile: ids(&view.pile),
                top_play_count: view.top_play_count.into(),
                pass_chain: ids(&view.pass_chain),
                pass_obligation: view.pass_obligation,
                play_at_most: rank_to_proto(view.play_at_most),
                draw_pile: view.draw_pile.into(),
                out_of_hand: view.out_of_hand.into(),
                clockwise: view.clockwise,
                pending_skips: view.pending_skips.into(),
                base_rules: Some(base_to_proto(&view.base)),
                rules: view.rules.iter().map(rule_to_proto).collect(),
                scheduled: view.scheduled.iter().map(change_to_proto).collect(),
                vote_held: view.vote_held,
            })),
        }
    }

    fn event_to_proto(event: &Event) -> pb::GameEvent {
        let event = match event {
            Event::HandStarted {
                hand,
                dealer,
                opener,
            } => E::HandStarted(pb::LoptiHandStarted {
                hand: (*hand).into(),
                dealer: (*dealer).into(),
                opener: (*opener).into(),
            }),
            Event::Dealt {
                seat,
                face_up,
                face_down,
                in_hand,
                draw_pile,
            } => E::Dealt(pb::LoptiDealt {
                seat: (*seat).into(),
                face_up: ids(face_up),
                face_down: (*face_down).into(),
                in_hand: (*in_hand).into(),
                draw_pile: (*draw_pile).into(),
            }),
            Event::YourHand { cards } => E::YourHand(pb::LoptiCards { cards: ids(cards) }),
            Event::Swapped {
                seat,
                to_hand,
                to_face_up,
            } => E::Swapped(pb::LoptiSwapped {
                seat: (*seat).into(),
                to_hand: to_hand.to_string(),
                to_face_up: to_face_up.to_string(),
            }),
            Event::KeptCards { seat } => E::KeptCards(seat_only(*seat)),
            Event::TurnStarted { seat } => E::TurnStarted(seat_only(*seat)),
            Event::Played {
                seat,
                cards,
                source,
                bonus,
            } => E::Played(pb::LoptiPlayed {
                seat: (*seat).into(),
                cards: ids(cards),
                source: match source {
                    Source::Hand => pb::LoptiSource::Hand,
                    Source::FaceDown => pb::LoptiSource::FaceDown,
                } as i32,
                bonus: *bonus,
            }),
            Event::FaceDownFailed { seat, card } => E::FaceDownFailed(pb::LoptiSeatCard {
                seat: (*seat).into(),
                card: card.to_string(),
            }),
            Event::PickedUp { seat, cards } => E::PickedUp(seat_cards(*seat, cards)),
            Event::Drew { seat, count } => E::Drew(pb::LoptiDrew {
                seat: (*seat).into(),
                count: (*count).into(),
            }),
            Event::YouDrew { cards } => E::YouDrew(pb::LoptiCards { cards: ids(cards) }),
            Event::Burned { seat, cause, cards } => E::Burned(pb::LoptiBurned {
                seat: (*seat).into(),
                cause: match cause {
                    BurnCause::BurnRank => pb::LoptiBurnCause::BurnRank,
                    BurnCause::FourOfARank => pb::LoptiBurnCause::FourOfARank,
                    BurnCause::FourPasses => pb::LoptiBurnCause::FourPasses,
                    BurnCause::CustomRule => pb::LoptiBurnCause::CustomRule,
                } as i32,
                cards: ids(cards),
            }),
            Event::MustPickUpOrPass { seat } => E::MustPickUpOrPass(seat_only(*seat)),
            Event::FaceUpTaken { seat, cards } => E::FaceUpTaken(seat_cards(*seat, cards)),
            Event::RuleFired { rule, seat } => E::RuleFired(pb::LoptiRuleFired {
                rule: (*rule).into(),
                seat: (*seat).into(),
            }),
            Event::TurnSkipped { seat } => E::TurnSkipped(seat_only(*seat)),
            Event::DirectionReversed => E::DirectionReversed(EMPTY),
            Event::BonusPlayGranted { seat } => E::BonusPlayGranted(seat_only(*seat)),
            Event::BonusPlayDropped { seat, rule } => E::BonusPlayDropped(pb::LoptiRuleFired {
                rule: (*rule).into(),
                seat: (*seat).into(),
            }),
            Event::HandWon { seat, hand } => E::HandWon(pb::LoptiHandWon {
                seat: (*seat).into(),
                hand: (*hand).into(),
            }),
            Event::RuleCreated { rule } => E::RuleCreated(rule_to_proto(rule)),
            Event::RuleSkipped { seat } => E::RuleSkipped(seat_only(*seat)),
            Event::RuleCancelled { rule, by } => E::RuleCancelled(pb::LoptiRuleCancelled {
                rule: (*rule).into(),
                by: (*by).into(),
            }),
            Event::Proposed { proposal } => E::Proposed(proposal_to_proto(proposal)),
            Event::ProposalDeclined { seat } => E::ProposalDeclined(seat_only(*seat)),
            Event::Voted { seat } => E::Voted(seat_only(*seat)),
            Event::VoteCounted {
                ballots,
                yes,
                result,
            } => E::VoteCounted(pb::LoptiVoteCounted {
                ballots: ballots.iter().map(|b| ballot_to_proto(*b) as i32).collect(),
                yes: (*yes).into(),
                result: match result {
                    VoteResult::Passed => pb::LoptiVoteResult::Passed,
                    VoteResult::Failed => pb::LoptiVoteResult::Failed,
                    VoteResult::Tied => pb::LoptiVoteResult::Tied,
                } as i32,
            }),
            Event::RoshamboStarted {
                challenger,
                defender,
            } => E::RoshamboStarted(pb::LoptiRoshamboStarted {
                challenger: (*challenger).into(),
                defender: (*defender).into(),
            }),
            Event::ThrowCommitted { seat } => E::ThrowCommitted(seat_only(*seat)),
            Event::ThrowsRevealed {
                challenger,
                defender,
                score,
                decisive,
            } => E::ThrowsRevealed(pb::LoptiThrowsRevealed {
                throws: Some(throws(*challenger, *defender)),
                challenger_wins: score[0].into(),
                defender_wins: score[1].into(),
                decisive: (*decisive).into(),
            }),
            Event::RoshamboWon { seat } => E::RoshamboWon(seat_only(*seat)),
            Event::ChangeApplied { change } => E::ChangeApplied(change_to_proto(change)),
            Event::ChangeScheduled { change } => E::ChangeScheduled(change_to_proto(change)),
            Event::ChangeLapsed { change } => E::ChangeLapsed(change_to_proto(change)),
            Event::MatchOver { hands_won, winners } => E::MatchOver(pb::LoptiMatchOver {
                hands_won: hands_won.iter().map(|&w| u32::from(w)).collect(),
                winners: seats(*winners),
            }),
        };
        pb::GameEvent {
            game: Some(pb::game_event::Game::Lopti(pb::LoptiEvent {
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
                hands: 1,
                ..Config::default()
            },
        ];
        crate::games::round_trip::check::<Lopti>(&configs);
    }
}
