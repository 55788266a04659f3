CREATE TABLE "engine_attachments" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"document_id" uuid NOT NULL,
	"recipient_id" bigint NOT NULL,
	"field_id" bigint NOT NULL,
	"blob_key" text NOT NULL,
	"name" text NOT NULL,
	"content_type" text NOT NULL,
	"size" integer NOT NULL,
	"sha256" text NOT NULL,
	"uploaded_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "engine_attachments" ADD CONSTRAINT "engine_attachments_document_id_engine_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."engine_documents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "engine_attachments" ADD CONSTRAINT "engine_attachments_recipient_id_engine_recipients_id_fk" FOREIGN KEY ("recipient_id") REFERENCES "public"."engine_recipients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "engine_attachments" ADD CONSTRAINT "engine_attachments_field_id_engine_fields_id_fk" FOREIGN KEY ("field_id") REFERENCES "public"."engine_fields"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "engine_attachments_field_idx" ON "engine_attachments" USING btree ("field_id");--> statement-breakpoint
CREATE INDEX "engine_attachments_document_idx" ON "engine_attachments" USING btree ("document_id");