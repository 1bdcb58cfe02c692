"""Durable entities: bank accounts as a class-based entity, used from the client and from a transfer orchestration.

The client opens two accounts with signals; an orchestration moves money between them inside a critical
section (both accounts locked), so concurrent transfers never lose an update; the client then reads the
balances back and lists the accounts.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from _support import Runtime, parse_args

from durabletask import client, task
from durabletask.entities import DurableEntity, EntityInstanceId


class Account(DurableEntity):
    """A bank account; its state is the balance."""

    def deposit(self, amount: int) -> int:
        balance = self.get_state(int, 0) + amount
        self.set_state(balance)
        return balance

    def withdraw(self, amount: int) -> int:
        balance = self.get_state(int, 0)
        if amount > balance:
            raise ValueError(f"insufficient funds: balance {balance}, asked for {amount}")
        self.set_state(balance - amount)
        return balance - amount

    def balance(self) -> int:
        return self.get_state(int, 0)


def transfer(ctx: task.OrchestrationContext, order: dict[str, Any]) -> Any:
    source = EntityInstanceId("account", order["from"])
    target = EntityInstanceId("account", order["to"])
    with (yield ctx.lock_entities([source, target])):
        if (yield ctx.call_entity(source, "balance")) < order["amount"]:
            return "declined"
        yield ctx.call_entity(source, "withdraw", order["amount"])
        yield ctx.call_entity(target, "deposit", order["amount"])
    return "done"


def wait_for_balance(c: client.TaskHubGrpcClient, account: EntityInstanceId, expected: int) -> None:
    # Signals are one-way: poll the entity until they have been applied.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        metadata = c.get_entity(account)
        if metadata is not None and metadata.get_typed_state(int) == expected:
            return
        time.sleep(0.1)
    raise TimeoutError(f"{account} did not reach {expected}")


def main() -> int:
    args = parse_args(__doc__ or "")
    suffix = uuid.uuid4().hex[:6]
    alice, bob = EntityInstanceId("account", f"alice-{suffix}"), EntityInstanceId("account", f"bob-{suffix}")
    with Runtime.from_args(args) as rt, rt.worker() as w:
        w.add_entity(Account)
        w.add_orchestrator(transfer)
        w.start()
        c = rt.client()
        c.signal_entity(alice, "deposit", 100)
        c.signal_entity(bob, "deposit", 50)
        wait_for_balance(c, alice, 100)
        wait_for_balance(c, bob, 50)
        orders = [{"from": alice.key, "to": bob.key, "amount": 30}, {"from": bob.key, "to": alice.key, "amount": 10},
                  {"from": alice.key, "to": bob.key, "amount": 500}]
        ids = [c.schedule_new_orchestration(transfer, input=order) for order in orders]
        outcomes = []
        for instance_id, order in zip(ids, orders, strict=True):
            state = c.wait_for_orchestration_completion(instance_id, timeout=60)
            assert state is not None
            if state.runtime_status != client.OrchestrationStatus.COMPLETED:
                print(f"{instance_id}: {state.runtime_status.name} {state.failure_details}")
                return 1
            outcomes.append(state.serialized_output)
            print(f"transfer {order['amount']} {order['from']} -> {order['to']}: {state.serialized_output}")
        balances = {}
        for account in (alice, bob):
            metadata = c.get_entity(account)
            balances[account.key] = metadata.get_typed_state(int) if metadata is not None else None
            print(f"{account}: balance {balances[account.key]}")
        listed = c.get_all_entities(client.EntityQuery(instance_id_starts_with="@account@", include_state=False))
        print(f"accounts: {sorted(m.id.key for m in listed if m.id.key.endswith(suffix))}")
        ok = outcomes == ['"done"', '"done"', '"declined"'] and balances == {alice.key: 80, bob.key: 70}
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
