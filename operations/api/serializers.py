"""Runtime operation representations: every internal value beside the display projection."""

from __future__ import annotations

from rest_framework import serializers

from operations.models import RuntimeOperation, RuntimeOperationEvent
from tasks.api.serializers import PROJECTION_FIELDS


class RuntimeOperationSerializer(serializers.ModelSerializer):
    sequence = serializers.CharField(read_only=True)
    projection_revision = serializers.CharField(read_only=True, allow_null=True)

    class Meta:
        model = RuntimeOperation
        fields = (
            "operation_id",
            "instance_id",
            "target_scope",
            "platform_agent_id",
            "conversation_id",
            "method",
            "capability",
            "transport",
            "sequence",
            "raw_status",
            "effect_state",
            "terminal",
            *PROJECTION_FIELDS,
            "projection_state",
            "projection_revision",
            "projection_platform_agent_id",
            "error_code",
            "error_message",
            "error_retry_mode",
            "error_effect_state",
            "error_request_id",
            "error_context",
            "cancel_requested_by",
            "cancel_reason",
            "cancel_requested_at",
            "progress",
            "result",
            "created_at",
            "updated_at",
            "mirrored_at",
            "upstream_missing_at",
        )
        read_only_fields = fields


class RuntimeOperationEventSerializer(serializers.ModelSerializer):
    operation_id = serializers.CharField(source="operation_id_raw", read_only=True)
    event_id = serializers.CharField(read_only=True)
    sequence = serializers.CharField(read_only=True)
    revision = serializers.CharField(read_only=True, allow_null=True)

    class Meta:
        model = RuntimeOperationEvent
        fields = (
            "operation_id",
            "event_id",
            "method",
            "type",
            "sequence",
            "recorded_at",
            "outcome",
            "revision",
            "payload",
            "result",
            "error",
        )
        read_only_fields = fields
