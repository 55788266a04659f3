CREATE TABLE "engine_documents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"numeric_id" bigserial NOT NULL,
	"status" text NOT NULL,
	"title" text,
	"original_key" text NOT NULL,
	"signed_key" text,
	"sha256" text NOT NULL,
	"pages" jsonb NOT NULL,
	"test_send" boolean DEFAULT false NOT NULL,
	"meta" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	CONSTRAINT "engine_documents_numeric_id_unique" UNIQUE("numeric_id")
);
--> statement-breakpoint
CREATE TABLE "engine_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"document_id" uuid NOT NULL,
	"recipient_id" integer,
	"event" text NOT NULL,
	"ip" text,
	"user_agent" text,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "engine_fields" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"document_id" uuid NOT NULL,
	"recipient_id" bigint NOT NULL,
	"type" text NOT NULL,
	"page" integer NOT NULL,
	"x" double precision NOT NULL,
	"y" double precision NOT NULL,
	"width" double precision NOT NULL,
	"height" double precision NOT NULL,
	"required" boolean DEFAULT true NOT NULL,
	"options" jsonb,
	"hide" jsonb,
	"value" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "engine_recipients" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"document_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"email" text NOT NULL,
	"name" text NOT NULL,
	"role" text NOT NULL,
	"signing_order" integer,
	"token_hash" text,
	"status" text DEFAULT 'PENDING' NOT NULL,
	"read_status" text DEFAULT 'NOT_OPENED' NOT NULL,
	"send_status" text DEFAULT 'NOT_SENT' NOT NULL,
	"notified_at" timestamp with time zone,
	"viewed_at" timestamp with time zone,
	"signed_at" timestamp with time zone,
	"rejected_at" timestamp with time zone,
	"rejection_reason" text,
	"ip" text,
	"user_agent" text,
	"signature" jsonb,
	CONSTRAINT "engine_recipients_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "envelope_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"envelope_id" uuid NOT NULL,
	"event_type" text NOT NULL,
	"recipient_email" text,
	"occurred_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "envelope_fields" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"envelope_id" uuid NOT NULL,
	"engine_field_id" bigint NOT NULL,
	"recipient_email" text NOT NULL,
	"type" text NOT NULL,
	"page" integer NOT NULL,
	"x" double precision NOT NULL,
	"y" double precision NOT NULL,
	"width" double precision NOT NULL,
	"height" double precision NOT NULL
);
--> statement-breakpoint
CREATE TABLE "envelope_recipients" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"envelope_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"email" text NOT NULL,
	"name" text NOT NULL,
	"role" text NOT NULL,
	"signing_order" integer,
	"engine_recipient_id" text NOT NULL,
	"signing_status" text DEFAULT 'NOT_SIGNED' NOT NULL,
	"read_status" text DEFAULT 'NOT_OPENED' NOT NULL,
	"send_status" text DEFAULT 'NOT_SENT' NOT NULL,
	"status" text DEFAULT 'PENDING' NOT NULL,
	"signed_at" timestamp with time zone,
	"viewed_at" timestamp with time zone,
	"rejected_at" timestamp with time zone,
	"rejection_reason" text
);
--> statement-breakpoint
CREATE TABLE "envelopes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"customer_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"engine_envelope_id" text NOT NULL,
	"engine_numeric_id" text,
	"status" text NOT NULL,
	"title" text,
	"meta" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"test_send" boolean DEFAULT false NOT NULL,
	"document_sha256" text NOT NULL,
	"page_count" integer NOT NULL,
	"detected_from_placeholders" boolean DEFAULT false NOT NULL,
	"charged_micros" bigint DEFAULT 0 NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"storage_expiry_days" integer NOT NULL,
	"storage_expires_at" timestamp with time zone NOT NULL,
	"purged_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "refunds" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"envelope_id" uuid NOT NULL,
	"customer_id" uuid NOT NULL,
	"amount_micros" bigint NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"ledger_entry_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "engine_events" ADD CONSTRAINT "engine_events_document_id_engine_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."engine_documents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "engine_fields" ADD CONSTRAINT "engine_fields_document_id_engine_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."engine_documents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "engine_fields" ADD CONSTRAINT "engine_fields_recipient_id_engine_recipients_id_fk" FOREIGN KEY ("recipient_id") REFERENCES "public"."engine_recipients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD CONSTRAINT "engine_recipients_document_id_engine_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."engine_documents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "envelope_events" ADD CONSTRAINT "envelope_events_envelope_id_envelopes_id_fk" FOREIGN KEY ("envelope_id") REFERENCES "public"."envelopes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "envelope_fields" ADD CONSTRAINT "envelope_fields_envelope_id_envelopes_id_fk" FOREIGN KEY ("envelope_id") REFERENCES "public"."envelopes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "envelope_recipients" ADD CONSTRAINT "envelope_recipients_envelope_id_envelopes_id_fk" FOREIGN KEY ("envelope_id") REFERENCES "public"."envelopes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "envelopes" ADD CONSTRAINT "envelopes_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_envelope_id_envelopes_id_fk" FOREIGN KEY ("envelope_id") REFERENCES "public"."envelopes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "engine_events_document_idx" ON "engine_events" USING btree ("document_id");--> statement-breakpoint
CREATE INDEX "engine_fields_document_idx" ON "engine_fields" USING btree ("document_id");--> statement-breakpoint
CREATE INDEX "engine_recipients_document_idx" ON "engine_recipients" USING btree ("document_id");--> statement-breakpoint
CREATE INDEX "envelope_events_envelope_idx" ON "envelope_events" USING btree ("envelope_id","id");--> statement-breakpoint
CREATE INDEX "envelope_fields_envelope_idx" ON "envelope_fields" USING btree ("envelope_id");--> statement-breakpoint
CREATE INDEX "envelope_recipients_envelope_idx" ON "envelope_recipients" USING btree ("envelope_id");--> statement-breakpoint
CREATE INDEX "envelopes_customer_created_idx" ON "envelopes" USING btree ("customer_id","mode","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "envelopes_engine_idx" ON "envelopes" USING btree ("engine_envelope_id");--> statement-breakpoint
CREATE INDEX "envelopes_expiry_idx" ON "envelopes" USING btree ("status","expires_at");--> statement-breakpoint
CREATE INDEX "envelopes_storage_expiry_idx" ON "envelopes" USING btree ("storage_expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "refunds_envelope_idx" ON "refunds" USING btree ("envelope_id");--> statement-breakpoint
CREATE INDEX "refunds_status_idx" ON "refunds" USING btree ("status");