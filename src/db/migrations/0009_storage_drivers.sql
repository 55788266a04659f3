CREATE TABLE "blob_chunks" (
	"generation" uuid NOT NULL,
	"seq" integer NOT NULL,
	"data" "bytea" NOT NULL,
	CONSTRAINT "blob_chunks_generation_seq_pk" PRIMARY KEY("generation","seq")
);
--> statement-breakpoint
CREATE TABLE "blob_uploads" (
	"generation" uuid PRIMARY KEY NOT NULL,
	"key" text COLLATE "C" NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "blobs" (
	"key" text COLLATE "C" PRIMARY KEY NOT NULL,
	"generation" uuid NOT NULL,
	"size" bigint NOT NULL,
	"modified_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "engine_documents" ADD COLUMN "purged_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "blob_uploads_started_idx" ON "blob_uploads" USING btree ("started_at");--> statement-breakpoint
CREATE INDEX "envelope_recipients_engine_recipient_idx" ON "envelope_recipients" USING btree ("engine_recipient_id");--> statement-breakpoint
CREATE INDEX "envelopes_engine_numeric_idx" ON "envelopes" USING btree ("engine_numeric_id");