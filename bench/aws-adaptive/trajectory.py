"""Drive botocore's own adaptive-mode client rate limiter on a fixed arrival sequence.

One client sends its requests one after another against a server whose token bucket
throttles. botocore's ClientRateLimiter, TokenBucket, RateClocker, CubicCalculator and
ThrottlingErrorDetector run unmodified; only the clock is fake. The fake clock keeps
retrystorm's time: whole nanoseconds, read as ns / 1e9 seconds, and a sleep of s seconds
advances it by ceil(s * 1e9) ns, which is how retrystorm turns a token wait into simulated
time. Answers come back at the instant of sending (no latency), so the run is sequential.

Writes one CSV row per request (see README.md); retrystorm's test
tests/it/aws_adaptive.rs replays the same sequence through its model and compares.
"""

import math
import sys

import botocore
from botocore.retries import adaptive, bucket, standard, throttling


class FakeClock(bucket.Clock):
    """retrystorm's clock: integer nanoseconds."""

    def __init__(self):
        self.ns = 0

    def sleep(self, amount):
        self.ns += math.ceil(amount * 1e9)

    def current_time(self):
        return self.ns / 1e9


class FakeCondition:
    """TokenBucket waits on a condition variable; here a wait is a sleep of the clock."""

    def __init__(self, clock):
        self._clock = clock

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def wait(self, timeout):
        self._clock.sleep(timeout)

    def notify(self):
        pass


class Server:
    """A token bucket server: RATE tokens a second, BURST at most, in integer nanotokens."""

    RATE = 8
    BURST = 4

    def __init__(self):
        self.tokens = self.BURST * 10**9
        self.last = 0

    def throttles(self, ns):
        self.tokens = min(self.BURST * 10**9, self.tokens + (ns - self.last) * self.RATE)
        self.last = ns
        if self.tokens >= 10**9:
            self.tokens -= 10**9
            return False
        return True


def arrivals():
    """The fixed arrival sequence: 40 s at about 30 requests a second, then 20 s at about 4."""
    gaps = [13, 71, 37, 5, 41]  # milliseconds, cycled
    t, i = 0, 0
    while t < 40_000_000_000:
        yield t
        t += gaps[i % len(gaps)] * 1_000_000 // 1
        i += 1
    while t < 60_000_000_000:
        yield t
        t += 250_000_000 + 7_000_000 * (i % 3)
        i += 1


def main(out):
    clock = FakeClock()
    rate_adjustor = throttling.CubicCalculator(starting_max_rate=0, start_time=clock.current_time())
    token_bucket = bucket.TokenBucket(max_rate=1, clock=clock)
    token_bucket._new_fill_rate_condition = FakeCondition(clock)
    limiter = adaptive.ClientRateLimiter(
        rate_adjustor=rate_adjustor,
        rate_clocker=adaptive.RateClocker(clock),
        token_bucket=token_bucket,
        throttling_detector=standard.ThrottlingErrorDetector(
            retry_event_adapter=standard.RetryEventAdapter()
        ),
        clock=clock,
    )
    server = Server()
    rows = ["arrival_ns,send_ns,throttled,fill_rate,measured_rate,enabled"]
    for a in arrivals():
        clock.ns = max(clock.ns, a)
        limiter.on_sending_request(request=None)
        sent = clock.ns
        throttled = server.throttles(sent)
        code = 'ThrottlingException' if throttled else None
        parsed = {'Error': {'Code': code}} if throttled else {}
        limiter.on_receiving_response(
            response=(None, parsed),
            attempts=1,
            operation=None,
            caught_exception=None,
            request_dict={'context': {}},
        )
        rows.append(
            f"{a},{sent},{int(throttled)},{token_bucket.max_rate!r},"
            f"{limiter._rate_clocker.measured_rate!r},{int(limiter._enabled)}"
        )
    with open(out, "w") as f:
        f.write(f"# botocore {botocore.__version__}: bench/aws-adaptive/trajectory.py\n")
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../../tests/data/aws-adaptive-trajectory.csv")
