from __future__ import annotations

from rest_framework import serializers

from beeos_console.auditlog.models import AuditEntry


class AuditEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEntry
        fields = (
            "id",
            "at",
            "actor",
            "actor_kind",
            "action",
            "object_kind",
            "object_id",
            "before",
            "after",
            "reason",
            "detail",
        )
        read_only_fields = fields
