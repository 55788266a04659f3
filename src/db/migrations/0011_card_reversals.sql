CREATE TABLE "card_reversals" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"top_up_id" uuid NOT NULL,
	"customer_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"stripe_object_id" text NOT NULL,
	"stripe_status" text,
	"claimed_micros" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "card_reversals_stripe_object_id_unique" UNIQUE("stripe_object_id"),
	CONSTRAINT "card_reversals_claimed_not_negative" CHECK ("card_reversals"."claimed_micros" >= 0)
);
--> statement-breakpoint
ALTER TABLE "card_top_ups" ADD COLUMN "payment_intent_id" text;--> statement-breakpoint
ALTER TABLE "card_top_ups" ADD COLUMN "reversed_micros" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "card_top_ups" ADD COLUMN "unrecovered_micros" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "card_reversals" ADD CONSTRAINT "card_reversals_top_up_id_card_top_ups_id_fk" FOREIGN KEY ("top_up_id") REFERENCES "public"."card_top_ups"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "card_reversals" ADD CONSTRAINT "card_reversals_customer_id_customers_id_fk" FOREIGN KEY ("customer_id") REFERENCES "public"."customers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "card_reversals_top_up_idx" ON "card_reversals" USING btree ("top_up_id");--> statement-breakpoint
ALTER TABLE "card_top_ups" ADD CONSTRAINT "card_top_ups_payment_intent_id_unique" UNIQUE("payment_intent_id");--> statement-breakpoint
ALTER TABLE "card_top_ups" ADD CONSTRAINT "card_top_ups_reversal_within_amount" CHECK ("card_top_ups"."reversed_micros" >= 0 AND "card_top_ups"."unrecovered_micros" >= 0 AND "card_top_ups"."reversed_micros" + "card_top_ups"."unrecovered_micros" <= "card_top_ups"."amount_micros");