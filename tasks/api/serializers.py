"""Task and message representations: raw values and the product projection side by side."""

from __future__ import annotations

from rest_framework import serializers

from tasks.models import Artifact, Message, Task

PROJECTION_FIELDS = (
    "status",
    "reason",
    "outcome_certainty",
    "retry_policy",
    "projection_rule",
    "projection_version",
)


class TaskSerializer(serializers.ModelSerializer):
    wire_state = serializers.CharField(
        read_only=True,
        help_text="The state in this protocol's own wire spelling (OpenAPI and A2A: `canceled`).",
    )
    terminal = serializers.BooleanField(source="is_terminal", read_only=True)
    cancellable = serializers.BooleanField(source="is_cancellable", read_only=True)

    class Meta:
        model = Task
        fields = (
            "task_id",
            "protocol",
            "raw_state",
            "wire_state",
            *PROJECTION_FIELDS,
            "terminal",
            "cancellable",
            "agent_id",
            "caller_id",
            "caller_principal_id",
            "caller_agent_id",
            "caller_owner_id",
            "target_principal_id",
            "target_agent_id",
            "target_owner_id",
            "a2a_direction",
            "a2a_counterpart",
            "history_truncated_to",
            "context_id",
            "channel_id",
            "error",
            "error_code",
            "created_at",
            "started_at",
            "updated_at",
            "completed_at",
            "deadline_at",
            "mirrored_at",
            "upstream_missing_at",
        )
        read_only_fields = fields


class ArtifactSerializer(serializers.ModelSerializer):
    class Meta:
        model = Artifact
        fields = ("artifact_id", "name", "description", "parts", "metadata", "extensions")
        read_only_fields = fields


class TaskDetailSerializer(TaskSerializer):
    artifacts = ArtifactSerializer(many=True, read_only=True)

    class Meta(TaskSerializer.Meta):
        fields = (*TaskSerializer.Meta.fields, "result", "metadata", "artifacts", "raw_payload")
        read_only_fields = fields


class MessageSerializer(serializers.ModelSerializer):
    task_id = serializers.CharField(source="task.task_id", read_only=True, default=None)

    class Meta:
        model = Message
        fields = (
            "message_id",
            "source",
            "task_id",
            "conversation_id",
            "type",
            "sender",
            "role",
            "reply_to",
            "state",
            "stop_reason",
            *PROJECTION_FIELDS,
            "body",
            "parts",
            "created_at",
            "updated_at",
        )
        read_only_fields = fields
