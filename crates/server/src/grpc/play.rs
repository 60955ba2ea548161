//! The outgoing half of a `Play` stream: the match's updates and the answers to the stream's
//! acts, merged so that an act's answer and the update it made leave together.
//!
//! Sent as they come, an act's answer and its update are two messages a few microseconds
//! apart, and nearly always two socket writes. [`Messages`] holds the first of the pair until
//! the second is there, so both are encoded into one buffer and written at once:
//! - an accepted act's answer on the watched match waits for the update of the version it made;
//! - an update that arrives while one of the stream's acts is being decided waits for that
//!   act's answer (the update is most likely the act's own).
//!
//! Nothing waits longer than [`HOLD`], nor after either source ends. What leaves keeps the
//! order a client relies on: oldest first, an answer after every update up to its version, and
//! an update stream's error after everything held before it.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;
use tokio::time::Sleep;
use tonic::Status;

/// The longest a message waits for its pair.
pub(super) const HOLD: Duration = Duration::from_millis(50);

/// An update's place in the match.
pub(super) trait Versioned {
    fn version(&self) -> u64;
}

impl Versioned for missive_proto::v1::WatchMatchResponse {
    fn version(&self) -> u64 {
        self.version
    }
}

/// The answer to one of the stream's acts.
#[derive(Debug)]
pub(super) struct Answer<A> {
    /// The version of the watched match the act made; 0 when it made none there (refused, a
    /// retry of an act already applied, or another match).
    pub after: u64,
    pub response: A,
}

/// How many of the stream's messages have been taken up to be answered. The acting task counts
/// each one before it decides it, so an update that arrives while the count is ahead of the
/// answers is held for the answer.
#[derive(Debug, Clone, Default)]
pub(super) struct Begun(Arc<AtomicU64>);

impl Begun {
    pub(super) fn one_more(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }

    fn count(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// One message of the merged stream.
#[derive(Debug, PartialEq)]
pub(super) enum Message<U, A> {
    Update(U),
    Answer(A),
}

type Updates<U> = Pin<Box<dyn Stream<Item = Result<U, Status>> + Send>>;

/// The merged stream; see the module's documentation.
pub(super) struct Messages<U, A> {
    updates: Option<Updates<U>>,
    answers: Option<mpsc::Receiver<Answer<A>>>,
    begun: Begun,
    /// Answers received.
    answered: u64,
    /// The highest version among the updates received (or the one the watch starts after).
    seen: u64,
    /// Held messages, each with its arrival number.
    held_updates: VecDeque<(u64, U)>,
    held_answers: VecDeque<(u64, Answer<A>)>,
    arrivals: u64,
    /// The update stream's error, sent after everything held.
    failed: Option<Status>,
    /// Released, in the order they leave.
    ready: VecDeque<Result<Message<U, A>, Status>>,
    /// When what is held must leave.
    deadline: Option<Pin<Box<Sleep>>>,
    done: bool,
}

impl<U: Versioned, A> Messages<U, A> {
    /// Merges `updates` of a watch that starts after version `after` with the `answers` to the
    /// acts that `begun` counts.
    pub(super) fn new(
        updates: impl Stream<Item = Result<U, Status>> + Send + 'static,
        after: u64,
        answers: mpsc::Receiver<Answer<A>>,
        begun: Begun,
    ) -> Self {
        Messages {
            updates: Some(Box::pin(updates)),
            answers: Some(answers),
            begun,
            answered: 0,
            seen: after,
            held_updates: VecDeque::new(),
            held_answers: VecDeque::new(),
            arrivals: 0,
            failed: None,
            ready: VecDeque::new(),
            deadline: None,
            done: false,
        }
    }

    /// Takes in everything either source has ready.
    fn receive(&mut self, cx: &mut Context<'_>) {
        while let Some(updates) = &mut self.updates {
            match updates.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(update))) => {
                    self.seen = self.seen.max(update.version());
                    self.arrivals += 1;
                    self.held_updates.push_back((self.arrivals, update));
                }
                Poll::Ready(Some(Err(status))) => {
                    self.failed = Some(status);
                    self.updates = None;
                }
                Poll::Ready(None) => self.updates = None,
                Poll::Pending => break,
            }
        }
        while let Some(answers) = &mut self.answers {
            match answers.poll_recv(cx) {
                Poll::Ready(Some(answer)) => {
                    self.answered += 1;
                    self.arrivals += 1;
                    self.held_answers.push_back((self.arrivals, answer));
                }
                Poll::Ready(None) => self.answers = None,
                Poll::Pending => break,
            }
        }
    }

    fn holding(&self) -> bool {
        !self.held_updates.is_empty() || !self.held_answers.is_empty() || self.failed.is_some()
    }

    /// Whether what is held has nothing more to wait for.
    fn complete(&self) -> bool {
        self.updates.is_none()
            || self.answers.is_none()
            || self.failed.is_some()
            || (self.begun.count() <= self.answered
                && self.held_answers.iter().all(|(_, a)| a.after <= self.seen))
    }

    /// Moves everything held to `ready`: an answer that made a version after the updates up to
    /// it and before the later ones, one that made none after the updates received before it,
    /// the update stream's error last.
    fn release(&mut self) {
        while let Some((arrived, answer)) = self.held_answers.pop_front() {
            while self
                .held_updates
                .front()
                .is_some_and(|(a, u)| match answer.after {
                    0 => *a < arrived,
                    after => u.version() <= after,
                })
            {
                let (_, update) = self.held_updates.pop_front().expect("a front");
                self.ready.push_back(Ok(Message::Update(update)));
            }
            self.ready.push_back(Ok(Message::Answer(answer.response)));
        }
        self.ready.extend(
            self.held_updates
                .drain(..)
                .map(|(_, update)| Ok(Message::Update(update))),
        );
        if let Some(status) = self.failed.take() {
            self.ready.push_back(Err(status));
        }
        self.deadline = None;
    }
}

/// Nothing in [`Messages`] is pinned in place: its sources and its timer are boxed.
impl<U, A> Unpin for Messages<U, A> {}

impl<U: Versioned, A> Stream for Messages<U, A> {
    type Item = Result<Message<U, A>, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(message) = this.ready.pop_front() {
                if message.is_err() {
                    // An error ends the gRPC stream; nothing follows it.
                    this.done = true;
                    this.ready.clear();
                }
                return Poll::Ready(Some(message));
            }
            if this.done {
                return Poll::Ready(None);
            }
            this.receive(cx);
            if !this.holding() {
                this.deadline = None;
                if this.updates.is_none() && this.answers.is_none() {
                    this.done = true;
                    return Poll::Ready(None);
                }
                return Poll::Pending;
            }
            if this.complete() {
                this.release();
                continue;
            }
            let deadline = this
                .deadline
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(HOLD)));
            if deadline.as_mut().poll(cx).is_ready() {
                this.release();
                continue;
            }
            return Poll::Pending;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use tokio_stream::wrappers::ReceiverStream;

    impl Versioned for u64 {
        fn version(&self) -> u64 {
            *self
        }
    }

    type Out = Message<u64, &'static str>;

    struct Play {
        updates: mpsc::Sender<Result<u64, Status>>,
        answers: mpsc::Sender<Answer<&'static str>>,
        begun: Begun,
        messages: Messages<u64, &'static str>,
    }

    fn play(after: u64) -> Play {
        let (updates, updates_rx) = mpsc::channel(16);
        let (answers, answers_rx) = mpsc::channel(16);
        let begun = Begun::default();
        let messages = Messages::new(
            ReceiverStream::new(updates_rx),
            after,
            answers_rx,
            begun.clone(),
        );
        Play {
            updates,
            answers,
            begun,
            messages,
        }
    }

    impl Play {
        async fn update(&self, version: u64) {
            self.updates.send(Ok(version)).await.unwrap();
        }

        async fn answer(&self, after: u64, response: &'static str) {
            self.answers.send(Answer { after, response }).await.unwrap();
        }

        /// Every message ready now, without waiting.
        fn ready(&mut self) -> Vec<Out> {
            let mut out = Vec::new();
            while let Some(Some(message)) = self.messages.next().now_or_never() {
                out.push(message.unwrap());
            }
            out
        }
    }

    use Message::{Answer as A, Update as U};
    use futures::FutureExt;

    #[tokio::test(start_paused = true)]
    async fn an_update_with_no_act_in_flight_leaves_at_once() {
        let mut p = play(0);
        p.update(1).await;
        p.update(2).await;
        assert_eq!(p.ready(), vec![U(1), U(2)]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_waits_for_the_update_it_made_and_leaves_after_it() {
        let mut p = play(4);
        p.begun.one_more();
        p.answer(5, "acted 5").await;
        assert_eq!(p.ready(), vec![]);
        p.update(5).await;
        assert_eq!(p.ready(), vec![U(5), A("acted 5")]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_update_during_an_act_waits_for_its_answer() {
        let mut p = play(4);
        p.begun.one_more();
        p.update(5).await;
        assert_eq!(p.ready(), vec![]);
        p.answer(5, "acted 5").await;
        assert_eq!(p.ready(), vec![U(5), A("acted 5")]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_that_made_no_version_leaves_at_once_after_what_came_before_it() {
        let mut p = play(0);
        p.begun.one_more();
        p.update(1).await;
        assert_eq!(p.ready(), vec![]);
        p.answer(0, "refused").await;
        assert_eq!(p.ready(), vec![U(1), A("refused")]);
        p.update(2).await;
        assert_eq!(p.ready(), vec![U(2)]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_whose_update_was_already_seen_leaves_at_once() {
        let mut p = play(7);
        p.begun.one_more();
        p.answer(6, "retried").await;
        assert_eq!(p.ready(), vec![A("retried")]);
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_held_longer_than_the_hold() {
        let mut p = play(0);
        p.begun.one_more();
        p.update(1).await;
        assert_eq!(p.ready(), vec![]);
        tokio::time::advance(HOLD - Duration::from_millis(1)).await;
        assert_eq!(p.ready(), vec![]);
        // The act's answer never comes within the hold: the update leaves without it.
        let next = tokio::time::timeout(Duration::from_millis(2), p.messages.next())
            .await
            .expect("released at the hold");
        assert_eq!(next.unwrap().unwrap(), U(1));
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_whose_update_never_comes_leaves_at_the_hold() {
        let mut p = play(0);
        p.begun.one_more();
        p.answer(3, "acted 3").await;
        let started = tokio::time::Instant::now();
        let next = p.messages.next().await.unwrap().unwrap();
        assert_eq!(next, A("acted 3"));
        assert_eq!(started.elapsed(), HOLD);
    }

    #[tokio::test(start_paused = true)]
    async fn updates_from_a_later_act_still_leave_in_order_around_answers() {
        let mut p = play(0);
        p.begun.one_more();
        p.begun.one_more();
        p.update(1).await;
        p.answer(1, "acted 1").await;
        p.update(2).await;
        // The second act is still being decided: all of it waits.
        assert_eq!(p.ready(), vec![]);
        p.answer(2, "acted 2").await;
        assert_eq!(p.ready(), vec![U(1), A("acted 1"), U(2), A("acted 2")]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_update_error_leaves_after_what_was_held_and_ends_the_stream() {
        let mut p = play(0);
        p.begun.one_more();
        p.update(1).await;
        p.updates
            .send(Err(Status::resource_exhausted("too slow")))
            .await
            .unwrap();
        assert_eq!(p.messages.next().await.unwrap().unwrap(), U(1));
        let err = p.messages.next().await.unwrap().unwrap_err();
        assert_eq!(err.code(), tonic::Code::ResourceExhausted);
        p.answer(1, "acted 1").await;
        assert!(p.messages.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn the_stream_ends_when_both_sources_end_with_everything_delivered() {
        let p = play(0);
        p.begun.one_more();
        p.answer(1, "acted 1").await;
        drop(p.updates);
        drop(p.answers);
        let rest: Vec<_> = p.messages.map(Result::unwrap).collect().await;
        assert_eq!(rest, vec![A("acted 1")]);
    }

    #[tokio::test(start_paused = true)]
    async fn updates_keep_flowing_after_the_acts_end() {
        let mut p = play(0);
        // The acting side gone: its only sender replaced by one of another channel.
        p.answers = mpsc::channel(1).0;
        p.update(1).await;
        assert_eq!(p.ready(), vec![U(1)]);
        p.update(2).await;
        assert_eq!(p.ready(), vec![U(2)]);
    }
}
