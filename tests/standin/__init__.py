"""Local stand-in for the BeeOS platform (OpenAPI) and the Cloud A2A task API.

    from tests.standin import BeeOSStandIn

    with BeeOSStandIn(api_key="oag_test") as server:
        server.add_task("task_1", agent_id="agent_1", status="running")
        api = TasksApi(ApiClient(Configuration(host=server.url, access_token="oag_test")))
        cloud = BeeOSClient(server.cloud_url, "oag_test")
        ...
        assert len(server.requests_to("POST", "*/cancel")) == 1

Seed / inspect: ``add_agent``, ``add_task``, ``set_task_status``, ``task``, ``add_message``,
``add_envelope``, ``messages``, ``add_instance``, ``add_operation`` (``add_operations``),
``set_operation_status``, ``operation``, ``add_event``, ``events``, ``settle_cancel``,
``add_a2a_task``, ``set_a2a_state``, ``a2a_task``, ``set_agent_card``,
``set_push_configs``, ``set_push_supported`` (JSON-RPC push-config list, ``push.py``).
Faults: ``rate_limit``, ``fail``, ``delay``, ``drop_connection``, ``a2a_error``, ``clear_faults``;
``stop()`` / ``start()`` for "connection refused".
Records: ``requests`` / ``requests_to``, ``calls`` (per route) / ``call_count()``,
``effects`` / ``effects_of``, ``errors``, ``wait_for``.
``parse_sse`` splits the text ``stream_runtime_operation_events`` returns.
"""

from .contract import ContractError
from .faults import Effect, Fault, RecordedRequest
from .server import BeeOSStandIn, parse_sse

__all__ = ["BeeOSStandIn", "ContractError", "Effect", "Fault", "RecordedRequest", "parse_sse"]
