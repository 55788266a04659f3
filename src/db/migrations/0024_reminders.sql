ALTER TABLE "customers" ADD COLUMN "reminder_defaults" jsonb;--> statement-breakpoint
ALTER TABLE "customers" ADD COLUMN "expiry_warning_days" integer;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "reminders_sent" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "last_reminded_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "expiry_warned_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "engine_documents_reminding_idx" ON "engine_documents" USING btree ("expires_at") WHERE "engine_documents"."status" IN ('SENT', 'PARTIALLY_SIGNED') AND ("engine_documents"."meta" ? 'reminders' OR "engine_documents"."meta" ? 'expiryWarningDays');