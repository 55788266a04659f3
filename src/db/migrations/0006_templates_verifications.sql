CREATE TABLE "templates" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"customer_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"title" text NOT NULL,
	"meta" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"document_key" text NOT NULL,
	"document_sha256" text NOT NULL,
	"pages" jsonb NOT NULL,
	"recipients" jsonb NOT NULL,
	"fields" jsonb NOT NULL,
	"detected_from_placeholders" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "stripe_events" (
	"id" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "verifications" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"customer_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"type" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"email" text NOT NULL,
	"name" text,
	"redirect_url" text,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"provider" text NOT NULL,
	"provider_ref" text,
	"provider_url" text,
	"link_salt" text,
	"token_hash" text,
	"code_hash" text,
	"code_expires_at" timestamp with time zone,
	"codes_sent" integer DEFAULT 0 NOT NULL,
	"last_code_sent_at" timestamp with time zone,
	"failed_attempts" integer DEFAULT 0 NOT NULL,
	"failure_reason" text,
	"envelope_id" uuid,
	"engine_recipient_id" text,
	"charged_micros" bigint DEFAULT 0 NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"verified_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "verifications_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "verification_required" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "verified_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "envelope_recipients" ADD COLUMN "verification_required" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "templates" ADD CONSTRAINT "templates_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "verifications" ADD CONSTRAINT "verifications_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "templates_customer_created_idx" ON "templates" USING btree ("customer_id","mode","created_at");--> statement-breakpoint
CREATE INDEX "verifications_customer_created_idx" ON "verifications" USING btree ("customer_id","mode","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "verifications_provider_ref_idx" ON "verifications" USING btree ("provider","provider_ref");--> statement-breakpoint
CREATE INDEX "verifications_envelope_idx" ON "verifications" USING btree ("envelope_id");--> statement-breakpoint
CREATE INDEX "verifications_engine_recipient_idx" ON "verifications" USING btree ("engine_recipient_id");