CREATE TABLE "engine_handovers" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"document_id" uuid NOT NULL,
	"recipient_id" bigint NOT NULL,
	"from_name" text NOT NULL,
	"from_email" text NOT NULL,
	"to_name" text NOT NULL,
	"to_email" text NOT NULL,
	"by" text NOT NULL,
	"reason" text,
	"old_token_hash" text,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "envelope_events" ADD COLUMN "details" jsonb;--> statement-breakpoint
ALTER TABLE "engine_handovers" ADD CONSTRAINT "engine_handovers_document_id_engine_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."engine_documents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "engine_handovers" ADD CONSTRAINT "engine_handovers_recipient_id_engine_recipients_id_fk" FOREIGN KEY ("recipient_id") REFERENCES "public"."engine_recipients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "engine_handovers_document_idx" ON "engine_handovers" USING btree ("document_id","recipient_id");--> statement-breakpoint
CREATE UNIQUE INDEX "engine_handovers_old_token_idx" ON "engine_handovers" USING btree ("old_token_hash");